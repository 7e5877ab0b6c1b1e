"""relaxc's steps that its emits share: the options, reading and checking a source, the
targets, the -O pipeline, and the configuration and cache the kernels are built with.

compile.py dispatches on --emit; artifact.py (the lowered outputs and the one-shot)
and compile.py's emitters both build on these.
"""

from __future__ import annotations

import sys

from ..diagnostics import SOURCES, DiagnosticError, UserError
from ..records import record
from .io import read_text


@record
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
    sign: str | None = None  # ... and signs it with this private key file (relaxld --sign)
    params: str | None = None  # --params weights.npz: bind-params runs first (transform/bind_params.py)
    use_cache: bool = True  # --no-cache: neither read nor fill the kernel cache


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


def resolve_targets(specs: tuple[str, ...], verbose: int = 0) -> list:
    """Targets from --target options (the host when none is given)."""
    from ..target import host_target, parse_target

    targets = [parse_target(spec) for spec in specs] or [host_target()]
    if verbose:
        for target in targets:
            sys.stderr.write(f"relaxc: target: {target}\n")
    return targets


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
        from ..tir.vector_buffers import check_vector_buffers

        check_vector_buffers(mod)  # a .vms's kernels are compiled as they are
        return mod
    check_scalar_tensors(mod)
    from ..build import lower

    return lower(mod, options.opt_level, target=packing_target(options))


def packing_target(options: CompileOptions):
    """The llvm target whose CPU model lays out constant weights (pack-constant-weights):
    the first llvm --target, else this host's, whatever the emit: `relaxc -S` then
    `--emit kernels` (with the same --target, or none) packs as the one-shot does."""
    from ..target import host_target, parse_target

    if not options.targets:
        return host_target()
    return next((target for target in map(parse_target, options.targets) if target.kind == "llvm"), None)


def check_scalar_tensors(mod) -> None:
    """Relax tensors and TIR buffers whose element types relaxc cannot compile, at their
    annotations (a vector type such as "float32x4", a type numpy lacks)."""
    from ..tir.static_bounds import out_of_bounds_diagnostics
    from ..tir.vector_buffers import vector_buffer_diagnostics
    from .lowering_check import check_scalar_tensors as check  # it builds on this module

    # The source's own kernels, as written: vector element types, loops past their buffers.
    buffers = vector_buffer_diagnostics(mod) + out_of_bounds_diagnostics(mod)
    try:
        check(mod)
    except DiagnosticError as error:
        raise DiagnosticError([*error.diagnostics, *buffers]) from None
    if buffers:
        raise DiagnosticError(buffers)


def kernel_context(options: CompileOptions):
    """The kernels' configuration, handed to code generation: the -O level and --pass-config."""
    from ..ir.pass_infra import PassContext

    return PassContext(opt_level=options.opt_level, config=pass_config(options.pass_config))


def kernel_cache(options: CompileOptions):
    """The kernel cache of this run: the environment's (RELAX_CACHE, RELAX_CACHE_DIR), none
    with --no-cache."""
    from ..codegen.kernel_cache import default_cache

    return default_cache() if options.use_cache else None


def pass_config(items: tuple[str, ...]) -> dict:
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
    check_scalar_tensors(mod)  # before any pass meets a tensor type it cannot lower
    passes = [get_pass(name) for name in names]  # unknown names fail before any pass runs
    instruments = []
    if options.print_after_all or options.print_before or options.print_after:
        instruments.append(PrintInstrument(options.print_before, options.print_after, options.print_after_all))
    if options.verify_each:
        instruments.append(VerifyInstrument())
    timing = PassTimingInstrument() if options.time_passes else None
    if timing is not None:
        instruments.append(timing)
    config = pass_config(options.pass_config)
    if options.params is not None:
        from ..transform.bind_params import CONFIG_KEY

        config[CONFIG_KEY] = options.params
    target = packing_target(options)
    if target is not None:
        from ..transform.pack_constant_weights import TARGET_KEY

        config.setdefault(TARGET_KEY, target)
    context = PassContext(opt_level=options.opt_level, config=config,
                          disabled=set(options.disabled), instruments=instruments)
    with context:
        mod = run_passes(mod, passes, context)
    if timing is not None:
        sys.stderr.write(timing.report())
    return mod
