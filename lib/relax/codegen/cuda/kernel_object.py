"""GPU kernels to a cuda .ko: per cuda target, NVRTC's cubin and PTX, and the kernels' metadata.

A cuda .ko holds only cuda targets, one entry per arch:
TargetEntry("nvptx64-nvidia-cuda", "sm_90", "", abi, "cubin") with the cubin as its
"object" section and the PTX (compute_90) as its "ptx" section
(docs/file-format-ko.md). The source and the metadata do not depend on the arch
except through the schedule, and the metadata must be the same for every target.
"""

from __future__ import annotations

from ...diagnostics import UserError
from ...runtime.kernels import container
from ...runtime.kernels.abi import KERNEL_ABI_VERSION
from .nvrtc import compile_cubin, compile_ptx
from .source import cuda_target, generate_source, lowered_device_kernels

CUDA_TRIPLE = "nvptx64-nvidia-cuda"


def build_cuda_kernel_object(mod_or_funcs, targets, context=None) -> bytes:
    """The .ko bytes of the GPU kernels of `mod_or_funcs` for cuda `targets` (Targets or strings),
    lowered under the build's PassContext `context` (the current one when not given)."""
    if not isinstance(targets, (list, tuple)):
        targets = [targets]
    if not targets:
        raise UserError("codegen: cuda: no target to build kernels for")
    entries, objects, ptx, kernels = [], {}, {}, None
    seen = set()
    # The GPU schedules read only the block size of a target, not its arch: the kernels are
    # lowered once per block size, and each arch compiles the same lowered functions.
    lowered: dict[int, dict] = {}
    for index, spec in enumerate(targets):
        target = cuda_target(spec)
        arch = target.arch
        if arch in seen:
            raise UserError(f"codegen: cuda: arch '{arch}' is given twice")
        seen.add(arch)
        threads = target.max_threads_per_block
        if threads not in lowered:
            lowered[threads] = lowered_device_kernels(mod_or_funcs, target, context)
        source, infos = generate_source(lowered[threads], target, context)
        what = f"kernels {', '.join(info.name for info in infos)}" if infos else "the kernels"
        if kernels is None:
            kernels = infos
        elif [k.to_json() for k in infos] != [k.to_json() for k in kernels]:
            raise UserError("codegen: cuda: kernel metadata differs between the targets of one kernel object "
                            "(build one .ko per target)")
        entries.append(container.TargetEntry(CUDA_TRIPLE, arch, "", KERNEL_ABI_VERSION, "cubin"))
        objects[index] = compile_cubin(source, arch, what)
        ptx[index] = compile_ptx(source, arch, what).encode("utf-8")
    return container.write(container.KernelObject(tuple(entries), tuple(kernels or ()), objects, {}, ptx))
