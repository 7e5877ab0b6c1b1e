"""relax.build: an IRModule to an Executable, the one call relaxc and Python users share.

    exe = relax.build(mod, target="llvm", opt_level=2)
    vm = relax.VirtualMachine(exe, "cpu")
    out = vm["main"](x)

It runs the -O pipeline (transform/pipeline.py) to the VM-ready form, generates
bytecode for the Relax functions (vm/codegen/codegen_vm.py) and native code for the kernels
(codegen/), and imports the kernels into the executable when they run on this host.
The kernel object stays attached as `exe.kernel_objects` for export.
"""

from __future__ import annotations

import sys
import types

from .ir.module import IRModule


def lower(mod: IRModule, opt_level: int = 2, context=None) -> IRModule:
    """The module after the -O pipeline: VM-ready Relax functions and every kernel."""
    from .ir.pass_infra import PassContext, run_passes
    from .transform.pipeline import pipeline

    context = context or PassContext(opt_level=opt_level)
    with context:
        return run_passes(mod, pipeline(opt_level), context)


def build(mod: IRModule, target="llvm", opt_level: int = 2, lowered: bool = False, params=None):
    """An Executable for `mod` (already VM-ready when `lowered`), kernels built for `target`.

    `params` (name -> array) binds the weights of `main` as constants before the
    pipeline (transform/bind_params.py), so the executable carries them and `main`
    takes only its inputs."""
    from .codegen.build_kernels import build_kernel_object
    from .runtime.kernels.library import load_kernel_library
    from .target import parse_target
    from .target.target import Target
    from .vm.codegen.codegen_vm import generate

    target = target if isinstance(target, Target) else parse_target(target)
    if params:
        from .transform.bind_params import BindParams

        mod = BindParams(params).run(mod)
    if not lowered:
        mod = lower(mod, opt_level, _pipeline_context(target, opt_level))
    exe = generate(mod)
    exe.kernel_objects = []
    kernels = mod.prim_funcs()
    if kernels and target.kind == "cuda":
        _build_for_cuda(exe, mod, target, opt_level)
    elif kernels:
        # Kernel schedules read the -O level from the pass context: build them under it.
        with _context_at(opt_level):
            kernel_object = build_kernel_object(IRModule.from_functions(kernels), [target])
        exe.kernel_objects.append(kernel_object)
        if target.kind == "llvm" and _runs_here(target):
            exe.import_module(load_kernel_library(kernel_object, "<built>"))
    return exe


def _build_for_cuda(exe, mod: IRModule, target, opt_level: int) -> None:
    """A cuda .ko for the device kernels and a host .ko for the shape functions (build_cuda.py);
    the host kernels are imported when they run here, the device ones load on a cuda VM."""
    from .build_cuda import build_cuda_objects
    from .runtime.kernels import container
    from .runtime.kernels.library import load_kernel_library

    with _context_at(opt_level):
        objects = build_cuda_objects(mod, [target])
    exe.device_kernel_objects = []
    exe.kernel_object_kinds = [kind for kind, _ in objects]  # export names them m.cuda.ko, m.host.ko
    for kind, data in objects:
        exe.kernel_objects.append(data)
        if kind == "cuda":
            exe.device_kernel_objects.append(("<built cuda>", container.read(data, "<built cuda>")))
        elif _runs_here(target.host_target):
            exe.import_module(load_kernel_library(data, "<built host>"))


def _pipeline_context(target, opt_level: int):
    """The -O pipeline's context for `target`: cuda builds leave out the CPU-only passes."""
    if target.kind != "cuda":
        return None
    from .ir.pass_infra import PassContext
    from .transform.pipeline import CPU_ONLY_PASSES

    return PassContext(opt_level=opt_level, disabled=set(CPU_ONLY_PASSES))


def _context_at(opt_level: int):
    """The current pass context (its config kept) at `opt_level`."""
    import dataclasses

    from .ir.pass_infra import PassContext

    return dataclasses.replace(PassContext.current(), opt_level=opt_level, instruments=[])


def _runs_here(target) -> bool:
    from .target import host_target

    host = host_target()
    return getattr(target, "mtriple", None) in (None, "", host.mtriple) or target.mtriple == host.mtriple


class _CallableModule(types.ModuleType):
    """`relax.build` names both this module and its function. Python binds an imported
    submodule as the package's attribute, so the module forwards calls to `build`:
    `relax.build(mod)` works whichever of the two the attribute is."""

    def __call__(self, *args, **kwargs):
        return build(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
