"""Code generation: lowered TIR kernels to native CPU code through LLVM (llvmlite).

Sits after the TIR lowering (relax.tir.pipeline.lower_for_codegen) and before
linking: build_kernels.py turns every PrimFunc of a module into LLVM IR per
target (kernel_codegen.py with the expression, intrinsic, statement and
parallel-loop mixins; the lowering on a thread of its own, fresh_stack.py), cuts
it into parts that worker threads optimize at O3 for the target CPU and compile
while the next kernels are generated (object_parts.py; LLVM's C functions
through relax.llvm_capi), and packs the native objects, the bitcode and the
kernel metadata into a .ko (kernel_object.py). The runtime side that loads and
calls them is relax.runtime.kernels; the calling convention is docs/kernel-abi.md.
"""

from .build_kernels import build_host_library, build_kernel_object, emit_assembly, emit_llvm_ir

__all__ = ["build_host_library", "build_kernel_object", "emit_assembly", "emit_llvm_ir"]
