"""Kernels of a module to one CUDA C source and their KernelInfos.

Kernels not yet lowered are lowered for the cuda target first
(relax.tir.pipeline.lower_for_codegen runs the default GPU schedule). Host shape
functions (host_kernels.is_host_kernel: vm-shape-lower's `shape_func`s on the
CPU shape heap) are not GPU kernels and are left out: the host .ko builds them.
"""

from __future__ import annotations

from ...diagnostics import UserError
from ...ir import tir
from ...ir.module import IRModule
from .c_types import PRELUDE
from .kernel import KernelPrinter
from .host_kernels import is_host_kernel


def cuda_target(target):
    """A relax Target of kind cuda from a Target or a string such as "cuda -arch=sm_90"."""
    from ...target import Target

    if isinstance(target, str):
        target = Target.parse(target)
    if getattr(target, "kind", None) != "cuda":
        raise UserError(f"codegen: cuda kernels need a 'cuda' target, not '{getattr(target, 'kind', target)}'")
    return target


def device_kernels(mod) -> dict[str, tir.PrimFunc]:
    """{name: PrimFunc} of the GPU kernels of an IRModule, a dict or one PrimFunc."""
    if isinstance(mod, IRModule):
        funcs = dict(mod.prim_funcs())
    elif isinstance(mod, tir.PrimFunc):
        funcs = {str(mod.attrs.get("global_symbol", "main")): mod}
    else:
        funcs = dict(mod)
    return {name: func for name, func in funcs.items() if not is_host_kernel(name, func)}


def lowered_device_kernels(mod, target, context=None) -> dict[str, tir.PrimFunc]:
    """The GPU kernels of `mod`, each lowered for the cuda `target` (those lowered already kept)."""
    target = cuda_target(target)
    return {name: _lowered(func, target, context) for name, func in device_kernels(mod).items()}


def _lowered(func: tir.PrimFunc, target, context) -> tir.PrimFunc:
    if func.attrs and func.attrs.get("tir.lowered"):
        return func
    from ...tir.pipeline import lower_for_codegen

    return lower_for_codegen(func, target, context)


def generate_source(mod, target, context=None) -> tuple[str, tuple]:
    """(CUDA C source of every GPU kernel, their KernelInfos sorted by name), lowered under
    the build's PassContext `context` (the current one when not given)."""
    target = cuda_target(target)
    funcs = device_kernels(mod)
    parts, infos = [PRELUDE], []
    for name in sorted(funcs):
        text, info = KernelPrinter(name, _lowered(funcs[name], target, context)).generate()
        parts.append(f"// kernel {name}\n{text}")
        infos.append(info)
    return "\n".join(parts), tuple(infos)
