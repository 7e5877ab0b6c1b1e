"""What `relaxc` does, as a library function: read, check, transform, emit.

The click command in relaxc/cli.py only gathers options into CompileOptions and
calls `compile_main`; every stage lives in the library: the shared steps in
compile_steps.py, the lowered outputs and the one-shot in artifact.py, the other
emits here.
"""

from __future__ import annotations

import os
import sys

from ..diagnostics import UserError
from .compile_steps import (  # noqa: F401 - parse_source and CompileOptions are relaxc's API too
    CompileOptions, check_module, kernel_cache, kernel_context, kernels_of, parse_source, pass_config,
    resolve_targets, run_pipeline,
)
from .io import write_bytes, write_text

# Outputs after the -O pipeline: the lowered text, bytecode, the linked artifact (driver/artifact.py).
ARTIFACT_EMITS = ("vms", "vmo", "vmx")
# Outputs of the parsed module, which need no LLVM unless passes run (--passes, --params).
PARSED_EMITS = ("ir", "json", "pyfunc")


def listing_text(kind: str) -> str:
    """What `relaxc --list-targets`, `--list-ops` and `--list-passes` print."""
    if kind == "passes":
        from ..transform import list_passes_text

        return list_passes_text()
    if kind == "targets":
        from ..target import list_targets_text

        return list_targets_text()
    from ..op.registry import list_ops_text

    return list_ops_text()


def _emit_ir(mod, options: CompileOptions) -> None:
    from ..script import script

    write_text(options.output, script(mod))


def _emit_json(mod, options: CompileOptions) -> None:
    from ..ir.json import to_json

    write_text(options.output, to_json(mod) + "\n")


def _emit_pyfunc(mod, options: CompileOptions) -> None:
    """The module with every Relax function as an equivalent `@I.py_func` (numpy), its TIR
    functions kept (relax/py_convert/): after --passes, at whatever stage they leave it."""
    from ..py_convert import module_as_pyfunc

    write_text(options.output, module_as_pyfunc(mod))


def _emit_kernels(mod, options: CompileOptions) -> None:
    """The kernel objects of the targets' backend (codegen/backends.py): for CPU targets one,
    written to -o; for cuda targets the GPU kernels to -o and the shape functions, which
    run on the CPU's shape heap, to FILE.host.ko beside it, so that
    `relaxld m.vmo m.cuda.ko m.host.ko` links what `relaxc --target cuda -o m.vmx` links."""
    from ..codegen.backends import start_kernels

    targets = resolve_targets(options.targets, options.verbose)
    parts = start_kernels(kernels_of(mod, options), targets, kernel_cache(options), kernel_context(options),
                          empty_device=True)
    by_role = {part.role: part for part in parts}
    if "host" in by_role and options.output in (None, "-"):
        raise UserError("--emit kernels for a cuda target needs -o FILE.cuda.ko: the shape functions "
                        "are written to FILE.host.ko beside it")
    write_bytes(options.output, (by_role.get("cuda") or by_role[""]).result(), "a kernel object")
    if "host" in by_role:
        stem = options.output[:-3] if options.output.endswith(".ko") else options.output
        stem = stem[:-5] if stem.endswith(".cuda") else stem
        write_bytes(by_role["host"].file_name(stem), by_role["host"].result(), "a kernel object")
        if options.verbose:
            sys.stderr.write(f"relaxc: the shape functions (host kernels) written to {stem}.host.ko\n")


def _single_target(options: CompileOptions):
    targets = resolve_targets(options.targets, options.verbose)
    if len(targets) > 1:
        raise UserError(f"--emit {options.emit} takes one --target, got {len(targets)}")
    return targets[0]


def _emit_llvm(mod, options: CompileOptions) -> None:
    from ..codegen.build_kernels import emit_llvm_ir

    write_text(options.output, emit_llvm_ir(kernels_of(mod, options), _single_target(options),
                                            context=kernel_context(options)))


def _emit_asm(mod, options: CompileOptions) -> None:
    from ..codegen.build_kernels import emit_assembly

    write_text(options.output, emit_assembly(kernels_of(mod, options), _single_target(options),
                                             context=kernel_context(options)))


def _emit_cuda(mod, options: CompileOptions) -> None:
    from ..codegen.cuda import emit_cuda_source

    write_text(options.output, emit_cuda_source(kernels_of(mod, options), _single_target(options),
                                                kernel_context(options)))


EMITTERS = {"ir": _emit_ir, "json": _emit_json, "kernels": _emit_kernels, "llvm": _emit_llvm, "asm": _emit_asm,
            "cuda": _emit_cuda, "pyfunc": _emit_pyfunc}


# Output suffixes that choose what to emit when --emit is not given.
EMIT_BY_SUFFIX = {".vmx": "vmx", ".vmo": "vmo", ".vms": "vms"}


def choose_emit(emit: str | None, lowered_text: bool, output: str | None) -> str:
    """What to emit: --emit, else -S (.vms), else by the suffix of -o (`-o model.vmx`), else ir."""
    if emit is not None:
        return emit
    if lowered_text:
        return "vms"
    return EMIT_BY_SUFFIX.get(os.path.splitext(output or "")[1], "ir")


def loads_llvm(options: CompileOptions) -> bool:
    """Whether the command loads LLVM: to build kernels, or to ask for the host's CPU,
    which lays out constant weights whenever passes run (compile_steps.packing_target)."""
    return options.emit not in PARSED_EMITS or options.passes is not None or options.params is not None


def compile_main(options: CompileOptions) -> int:
    from .collector import cycle_collection_paused

    pass_config(options.pass_config)  # a malformed --pass-config fails before anything runs
    if loads_llvm(options):
        from .llvm_preload import start_loading_llvm

        start_loading_llvm()  # on another core while numpy is imported and the source parsed
    with cycle_collection_paused():
        if options.emit in ARTIFACT_EMITS:
            from .artifact import compile_artifact

            return compile_artifact(options)
        mod = parse_source(options.source)
        if options.check:
            check_module(mod)
        mod = run_pipeline(mod, options)
        EMITTERS[options.emit](mod, options)
    return 0
