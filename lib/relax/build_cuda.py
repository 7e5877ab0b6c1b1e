"""Kernels of a whole model for a cuda target: device kernels and host kernels, two .ko's.

A VM-ready module holds two kinds of PrimFuncs. Most are operator kernels: they run
on the GPU and go to the cuda code generator (relax.codegen.cuda, NVRTC: cubin +
PTX per arch). The shape functions that vm-shape-lower makes compute symbolic sizes
on the VM's shape heap, an int64 array that lives on the CPU (as in TVM): they are
built for the cuda target's host, an llvm target. The artifact carries both .ko's;
the linker resolves each kernel from the one that defines it.

A host kernel is recognised by its structure: a `shape_func*` PrimFunc whose only
parameter is one int64 buffer (the heap), or one marked `tir.is_host_func`.
"""

from __future__ import annotations

from .diagnostics import UserError
from .ir import tir
from .ir.module import IRModule


def is_host_kernel(name: str, func) -> bool:
    if func.attrs and func.attrs.get("tir.is_host_func"):
        return True
    if not name.startswith("shape_func") or len(func.params) != 1:
        return False
    buffer = dict(func.buffer_map).get(func.params[0]) if func.buffer_map else None
    return buffer is not None and str(buffer.dtype) == "int64"


def split_kernels(funcs) -> tuple[dict, dict]:
    """({name: device PrimFunc}, {name: host PrimFunc}) of a module's or a dict's PrimFuncs."""
    items = (funcs.prim_funcs() if isinstance(funcs, IRModule) else funcs).items()
    device, host = {}, {}
    for name, func in items:
        (host if is_host_kernel(name, func) else device)[name] = func
    return device, host


def build_cuda_objects(mod, targets, device: bool = True) -> list[tuple[str, bytes]]:
    """[("cuda", .ko bytes), ("host", .ko bytes)] for the cuda `targets` (each present only
    when it has kernels; the cuda one only with `device`); the host .ko is built for the
    first target's host."""
    from .codegen.build_kernels import build_kernel_object

    device_funcs, host = split_kernels(mod)
    objects = []
    if device and device_funcs:
        objects.append(("cuda", cuda_codegen().build_cuda_kernel_object(IRModule.from_functions(device_funcs), targets)))
    if host:
        host_target = targets[0].host_target
        if host_target is None:
            from .target import host_target as this_host

            host_target = this_host()
        objects.append(("host", build_kernel_object(IRModule.from_functions(host), [host_target])))
    return objects


def cuda_codegen():
    """relax.codegen.cuda, or a UserError when it (or NVRTC) is not available."""
    try:
        from .codegen import cuda
    except ImportError as error:
        raise UserError(f"cuda code generation is not available in this build ({error})") from None
    if not hasattr(cuda, "build_cuda_kernel_object"):
        raise UserError("cuda code generation is not available in this build "
                        "(relax.codegen.cuda has no build_cuda_kernel_object)")
    problem = cuda.cuda_problem() if hasattr(cuda, "cuda_problem") else None
    if problem:
        raise UserError(f"cannot compile for cuda: {problem}")
    return cuda


__all__ = ["build_cuda_objects", "is_host_kernel", "split_kernels", "tir"]
