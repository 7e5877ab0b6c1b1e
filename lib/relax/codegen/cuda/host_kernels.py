"""Which kernels of a cuda build run on the host.

A VM-ready module holds two kinds of PrimFuncs. Most are operator kernels: they run
on the GPU and go to the cuda code generator (NVRTC: cubin + PTX per arch). The
shape functions that vm-shape-lower makes compute symbolic sizes on the VM's shape
heap, an int64 array that lives on the CPU (as in TVM): they are built for the cuda
target's host, an llvm target. The artifact carries both .ko's; the linker resolves
each kernel from the one that defines it.

A host kernel is recognised by its structure: a `shape_func*` PrimFunc whose only
parameter is one int64 buffer (the heap), or one marked `tir.is_host_func`.
"""

from __future__ import annotations

from ...ir.module import IRModule


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
