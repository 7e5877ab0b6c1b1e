"""CUDA code generation: lowered TIR to CUDA C, compiled by NVRTC into a cuda .ko.

    build_cuda_kernel_object(mod_or_funcs, targets, context) -> bytes    .ko: per arch a cubin and PTX
    emit_cuda_source(mod_or_funcs, target) -> str               `relaxc --emit cuda`
    cuda_problem() -> str | None                                why NVRTC cannot be used here

Modules: c_types (dtypes, literals, the source prelude), intrinsics (the math
table), expr and stmt (TIR to C text), launches (a function split into launches
with their grid and block), kernel (one PrimFunc: `__global__` functions and
KernelInfo), source (a module's source), nvrtc (compilation), kernel_object (the
.ko). docs/cuda.md describes the design.
"""

from __future__ import annotations

from .kernel_object import build_cuda_kernel_object
from .nvrtc import cuda_problem
from .source import generate_source


def emit_cuda_source(mod_or_funcs, target, context=None) -> str:
    """The CUDA C source of the GPU kernels of `mod_or_funcs` for a cuda `target`."""
    return generate_source(mod_or_funcs, target, context)[0]


__all__ = ["build_cuda_kernel_object", "cuda_problem", "emit_cuda_source", "generate_source"]
