"""What `relaxc` does, as a library function: read, check, transform, emit.

The click command in relaxc/cli.py only gathers options into CompileOptions and
calls `compile_main`; every stage lives in the library.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from ..diagnostics import SOURCES, DiagnosticError, UserError
from .io import read_text, write_bytes, write_text


@dataclass(frozen=True)
class CompileOptions:
    source: str
    emit: str = "ir"
    output: str | None = None
    verbose: int = 0
    check: bool = True
    targets: tuple[str, ...] = ()
    passes: tuple[str, ...] | None = None  # None: no passes for --emit ir/json
    disabled: tuple[str, ...] = ()
    print_after_all: bool = False
    print_before: tuple[str, ...] = ()
    print_after: tuple[str, ...] = ()
    verify_each: bool = False
    pass_config: tuple[str, ...] = ()
    time_passes: bool = False
    opt_level: int = 2
    allow_undefined: tuple[str, ...] = ()  # the one-shot -o model.vmx links like relaxld
    exec_mode: str | None = None  # ... and records the exec mode the artifact asks for
    params: str | None = None  # --params weights.npz: bind-params runs first (transform/bind_params.py)
    use_cache: bool = True  # --no-cache: neither read nor fill the kernel cache


# Outputs after the -O pipeline: the lowered text, bytecode, the linked artifact (driver/artifact.py).
ARTIFACT_EMITS = ("vms", "vmo", "vmx")


def parse_source(path: str):
    """Parses a TVMScript file (or '-') into an IRModule, reporting every error."""
    from ..script import parse

    name, text = read_text(path)
    SOURCES.add(name, text)
    return parse(text, name)


def check_module(mod) -> None:
    """Checks what a file says before anything is emitted: well-formedness, then every
    operator call (unknown operators, argument counts, shapes and dtypes), as TVM's
    parser does. All errors found are reported together."""
    from ..diagnostics import render
    from ..ir.well_formed import check_well_formed
    from ..transform.normalize import Normalize

    diagnostics = check_well_formed(mod)
    if any(d.severity == "error" for d in diagnostics):
        raise DiagnosticError(diagnostics)
    for warning in diagnostics:
        sys.stderr.write(render(warning, "relaxc"))
    Normalize().run(mod)


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


def resolve_targets(specs: tuple[str, ...], verbose: int = 0) -> list:
    """Targets from --target options (the host when none is given)."""
    from ..target import host_target, parse_target

    targets = [parse_target(spec) for spec in specs] or [host_target()]
    if verbose:
        for target in targets:
            sys.stderr.write(f"relaxc: target: {target}\n")
    return targets


def _emit_ir(mod, options: CompileOptions) -> None:
    from ..script import script

    write_text(options.output, script(mod))


def _emit_json(mod, options: CompileOptions) -> None:
    from ..ir.json import to_json

    write_text(options.output, to_json(mod) + "\n")


# Operators a VM-ready (.vms) module still calls; any other operator means the
# module has not been through the -O pipeline yet.
VM_READY_OPERATORS = ("relax.vm.", "relax.call_builtin_with_ctx")


def is_vm_ready(mod) -> bool:
    """Whether a module is already lowered (a .vms): its Relax functions call only VM
    operators, packed functions and other functions."""
    from ..ir import expr as rx
    from ..ir.analysis import collect

    for func in mod.relax_functions().values():
        for call in collect(func, lambda n: isinstance(n, rx.Call) and isinstance(n.op, rx.Op)):
            if not call.op.name.startswith(VM_READY_OPERATORS):
                return False
    return True


def kernels_of(mod, options: CompileOptions):
    """The module whose PrimFuncs are the kernels: a source is lowered first, so that
    its operators become kernels too; a .vms already holds every kernel."""
    if is_vm_ready(mod):
        return mod
    from ..build import lower

    return lower(mod, options.opt_level)


def kernel_context(options: CompileOptions):
    """The kernels' configuration, handed to code generation: the -O level and --pass-config."""
    from ..ir.pass_infra import PassContext

    return PassContext(opt_level=options.opt_level, config=_pass_config(options.pass_config))


def kernel_cache(options: CompileOptions):
    """The kernel cache of this run: the environment's (RELAX_CACHE, RELAX_CACHE_DIR), none
    with --no-cache."""
    from ..codegen.kernel_cache import default_cache

    return default_cache() if options.use_cache else None


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
            "cuda": _emit_cuda}


def _pass_config(items: tuple[str, ...]) -> dict:
    config = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--pass-config takes KEY=VALUE, got '{item}'")
        config[key] = value
    return config


def run_pipeline(mod, options: CompileOptions, names: tuple[str, ...] | None = None):
    """Runs the passes the options ask for (or `names`), with their printing, checking and timing."""
    from ..ir.pass_infra import (
        PassContext, PassTimingInstrument, PrintInstrument, VerifyInstrument, get_pass, run_passes,
    )

    names = options.passes if names is None else names
    if options.params is not None and "bind-params" not in (names or ()):
        names = ("bind-params", *(names or ()))
    if names is None:
        return mod
    passes = [get_pass(name) for name in names]  # unknown names fail before any pass runs
    instruments = []
    if options.print_after_all or options.print_before or options.print_after:
        instruments.append(PrintInstrument(options.print_before, options.print_after, options.print_after_all))
    if options.verify_each:
        instruments.append(VerifyInstrument())
    timing = PassTimingInstrument() if options.time_passes else None
    if timing is not None:
        instruments.append(timing)
    config = _pass_config(options.pass_config)
    if options.params is not None:
        from ..transform.bind_params import CONFIG_KEY

        config[CONFIG_KEY] = options.params
    context = PassContext(opt_level=options.opt_level, config=config,
                          disabled=set(options.disabled), instruments=instruments)
    with context:
        mod = run_passes(mod, passes, context)
    if timing is not None:
        sys.stderr.write(timing.report())
    return mod


# Output suffixes that choose what to emit when --emit is not given.
EMIT_BY_SUFFIX = {".vmx": "vmx", ".vmo": "vmo", ".vms": "vms"}


def choose_emit(emit: str | None, lowered_text: bool, output: str | None) -> str:
    """What to emit: --emit, else -S (.vms), else by the suffix of -o (`-o model.vmx`), else ir."""
    if emit is not None:
        return emit
    if lowered_text:
        return "vms"
    return EMIT_BY_SUFFIX.get(os.path.splitext(output or "")[1], "ir")


def compile_main(options: CompileOptions) -> int:
    from .collector import cycle_collection_paused

    _pass_config(options.pass_config)  # a malformed --pass-config fails before anything runs
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
