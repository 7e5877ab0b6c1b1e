"""The code generation backends, one per target kind: where the kernels of a lowered
module go and which kernel objects (.ko) they make.

    start_kernels(mod, targets, cache, context) -> [KernelPart]    every build goes through here

`relax.build`, relaxc's one-shot `-o model.vmx` and `relaxc --emit kernels` all call
`start_kernels`; nothing else decides between llvm and cuda. A part has a role that
names its file: the llvm backend makes one (`model.ko`); the cuda backend makes the
GPU kernels (`model.cuda.ko`, NVRTC) and the shape functions, which run on the CPU's
shape heap, for the target's host (`model.host.ko`, llvmlite). `context` is the build's
configuration (ir.pass_infra.PassContext: -O level, pass config), handed down to the
schedules and the kernel cache key. The pipeline's own
per-kind choices (which passes a cuda build leaves out) are data in
transform/pipeline.py.
"""

from __future__ import annotations

from ..diagnostics import UserError
from ..ir.module import IRModule
from ..ir.pass_infra import PassContext
from ..records import record
from .build_kernels import PendingKernelObject, start_kernel_object


@record
class KernelPart:
    """One kernel object of a build: `role` "" (the CPU kernels), "cuda" or "host"."""

    role: str
    pending: PendingKernelObject

    def file_name(self, stem: str) -> str:
        return f"{stem}.{self.role}.ko" if self.role else f"{stem}.ko"

    def result(self) -> bytes:
        return self.pending.result()

    def all_cores(self) -> None:
        self.pending.all_cores()

    def cancel(self) -> None:
        self.pending.cancel()


class LlvmBackend:
    """CPU kernels through llvmlite, every target in one .ko."""

    kind = "llvm"

    def start(self, mod, targets, cache, context, device: bool = True, empty_device: bool = False):
        return [KernelPart("", start_kernel_object(mod, targets, cache, context))]


class CudaBackend:
    """GPU kernels through NVRTC (one .ko, every arch), shape functions for the host."""

    kind = "cuda"

    def start(self, mod, targets, cache, context, device: bool = True, empty_device: bool = False):
        from .cuda.host_kernels import split_kernels  # the cuda package is imported for cuda builds only

        device_funcs, host_funcs = split_kernels(mod)
        parts = []
        if device and (device_funcs or empty_device):
            data = cuda_codegen().build_cuda_kernel_object(IRModule.from_functions(device_funcs), targets, context)
            parts.append(KernelPart("cuda", PendingKernelObject(data)))
        if host_funcs:
            parts.append(KernelPart("host", start_kernel_object(IRModule.from_functions(host_funcs),
                                                                [host_of(targets[0])], cache, context)))
        return parts


BACKENDS = {"llvm": LlvmBackend(), "cuda": CudaBackend()}


def backend_for(targets):
    """The backend of `targets` (all of one kind: an artifact is for one kind of device)."""
    kinds = {target.kind for target in targets}
    if len(kinds) > 1:
        raise UserError("cuda and llvm targets cannot be built together (build one artifact "
                        "or kernel object per device kind)")
    kind = kinds.pop() if kinds else "llvm"
    if kind not in BACKENDS:
        raise UserError(f"codegen: no backend for targets of kind '{kind}'")
    return BACKENDS[kind]


def start_kernels(mod, targets, cache=None, context=None, device: bool = True,
                  empty_device: bool = False) -> list[KernelPart]:
    """The kernel objects of `mod`'s PrimFuncs for `targets` under the PassContext `context`
    (the current one when not given), LLVM compiling the CPU ones on worker threads until
    `result()`. `device=False` leaves out a cuda build's GPU kernels;
    `empty_device` makes their object even when there are none (relaxc --emit kernels
    always writes its -o)."""
    if not targets:
        raise UserError("codegen: no target to build kernels for")
    if context is None:
        context = PassContext.current()
    return backend_for(targets).start(mod, list(targets), cache, context, device, empty_device)


def host_of(target):
    """The llvm target a cuda target's host code is built for (this host when unnamed)."""
    if target.host_target is not None:
        return target.host_target
    from ..target import host_target

    return host_target()


def cuda_codegen():
    """relax.codegen.cuda, or a UserError when it (or NVRTC) is not available."""
    try:
        from . import cuda
    except ImportError as error:
        raise UserError(f"cuda code generation is not available in this build ({error})") from None
    problem = cuda.cuda_problem()
    if problem:
        raise UserError(f"cannot compile for cuda: {problem}")
    return cuda
