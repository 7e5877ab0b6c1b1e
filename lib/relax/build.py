"""relax.build: an IRModule to an Executable, the one call relaxc and Python users share.

    exe = relax.build(mod, target="llvm", opt_level=2)
    vm = relax.VirtualMachine(exe, "cpu")
    out = vm["main"](x)

It runs the -O pipeline (transform/pipeline.py) to the VM-ready form, generates
bytecode for the Relax functions (vm/codegen/codegen_vm.py) and the kernel objects
through the target's backend (codegen/backends.py, as relaxc does), and imports the
kernels into the executable when they run on this host. The kernel objects stay
attached as `exe.kernel_objects` for export.
"""

from __future__ import annotations

import dataclasses
import sys
import types

from .ir.module import IRModule


def lower(mod: IRModule, opt_level: int = 2, context=None, target=None) -> IRModule:
    """The module after the -O pipeline for `target`'s kind: VM-ready Relax functions and
    every kernel. Its constant weights are packed for `target`'s CPU (the generic `llvm`
    without one): `build(..., lowered=True)` for another CPU runs, only slower."""
    from .ir.pass_infra import PassContext, run_passes
    from .transform.pack_constant_weights import TARGET_KEY
    from .transform.pipeline import pipeline

    context = context or PassContext(opt_level=opt_level)
    if target is not None and target.kind == "llvm" and TARGET_KEY not in context.config:
        # constant weights packed in the layouts of the kernels built for `target`
        context = dataclasses.replace(context, config={**context.config, TARGET_KEY: target})
    with context:
        return run_passes(mod, pipeline(opt_level, target.kind if target is not None else "llvm"), context)


def build(mod: IRModule, target="llvm", opt_level: int = 2, lowered: bool = False, params=None):
    """An Executable for `mod` (already VM-ready when `lowered`), kernels built for `target`.

    `params` (name -> array) binds the weights of `main` as constants before the
    pipeline (transform/bind_params.py), so the executable carries them and `main`
    takes only its inputs."""
    from .codegen.backends import start_kernels
    from .target import parse_target
    from .target.target import Target
    from .vm.codegen.codegen_vm import generate

    target = target if isinstance(target, Target) else parse_target(target)
    if params:
        from .transform.bind_params import BindParams

        mod = BindParams(params).run(mod)
    if not lowered:
        mod = lower(mod, opt_level, target=target)
    exe = generate(mod)
    kernels = mod.prim_funcs()
    if kernels:
        parts = start_kernels(IRModule.from_functions(kernels), [target], context=_context_at(opt_level))
        _attach_kernels(exe, [(part.role, part.result()) for part in parts], target)
    return exe


def _attach_kernels(exe, objects, target) -> None:
    """The kernel objects go with the executable for export; the CPU ones that run on this
    host are imported, the GPU ones are read for a cuda VM."""
    from .codegen.backends import host_of
    from .runtime.kernels import container
    from .runtime.kernels.library import load_kernel_library

    for role, data in objects:
        exe.kernel_objects.append(data)
        exe.kernel_object_roles.append(role)
        if role == "cuda":
            exe.device_kernel_objects.append(("<built cuda>", container.read(data, "<built cuda>")))
        elif _runs_here(host_of(target) if role == "host" else target):
            exe.import_module(load_kernel_library(data, "<built host>" if role == "host" else "<built>"))


def _context_at(opt_level: int):
    """The kernels' configuration: the current pass context's config at `opt_level`."""
    from .ir.pass_infra import PassContext

    return dataclasses.replace(PassContext.current(), opt_level=opt_level, instruments=[])


def _runs_here(target) -> bool:
    from .target import host_target

    return getattr(target, "mtriple", None) in (None, "", host_target().mtriple)


class _CallableModule(types.ModuleType):
    """`relax.build` names both this module and its function. Python binds an imported
    submodule as the package's attribute, so the module forwards calls to `build`:
    `relax.build(mod)` works whichever of the two the attribute is."""

    def __call__(self, *args, **kwargs):
        return build(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
