"""Choosing and loading the GPU code of a cuda .ko for the GPU at hand.

A cuda .ko has one target entry per architecture (`cpu` is `sm_XY`), each with a
cubin (the "object" section, built by NVRTC for exactly that arch) and its PTX
(the "ptx" section). A cubin runs only on a GPU of the same compute capability, so
the choice is: the cubin whose arch equals the GPU's, else the PTX of the newest
arch not above the GPU's (the driver compiles it for the GPU when loading), else a
UserError listing what the artifact has and what the GPU is.
"""

from __future__ import annotations

import re

from ...diagnostics import UserError

CUDA_TRIPLE = "nvptx64-nvidia-cuda"


def arch_number(arch: str) -> int | None:
    """90 for 'sm_90', 'compute_90' or 'sm_90a'; None when it is not an arch name."""
    match = re.fullmatch(r"(?:sm|compute)_(\d+)[a-z]?", arch.strip())
    return int(match.group(1)) if match else None


def is_cuda_object(kernel_object) -> bool:
    """Whether a decoded .ko holds GPU code (its targets are all nvptx)."""
    return bool(kernel_object.targets) and all(t.triple == CUDA_TRIPLE for t in kernel_object.targets)


def _ptx_sections(kernel_object) -> dict:
    return dict(getattr(kernel_object, "ptx", None) or {})


def choose_image(kernel_object, capability: int, name: str = "<kernels>") -> tuple[str, int, bytes]:
    """("cubin" | "ptx", target index, image bytes) for a GPU of compute capability
    `capability` (e.g. 90 for 9.0)."""
    entries = [(arch_number(t.cpu), index) for index, t in enumerate(kernel_object.targets)
               if t.triple == CUDA_TRIPLE]
    for arch, index in entries:
        if arch == capability and index in kernel_object.objects:
            return "cubin", index, bytes(kernel_object.objects[index])
    ptx = _ptx_sections(kernel_object)
    usable = [(arch, index) for arch, index in entries if arch is not None and arch <= capability and index in ptx]
    if usable:
        arch, index = max(usable)
        text = ptx[index]
        return "ptx", index, text.encode() if isinstance(text, str) else bytes(text)
    archs = ", ".join(t.cpu for t in kernel_object.targets if t.triple == CUDA_TRIPLE) or "none"
    raise UserError(f"'{name}' has no GPU code that runs on this GPU (compute capability "
                    f"{capability // 10}.{capability % 10}, sm_{capability}); its architectures: {archs} "
                    "(rebuild with --target \"cuda -arch=sm_XY\" for this GPU)")


def device_capability(cupy, device_id: int = 0) -> int:
    """The compute capability of GPU `device_id` as a number: 90 for an H100."""
    return int(cupy.cuda.Device(device_id).compute_capability)


def load_module(cupy, image: bytes, device_id: int = 0):
    """A cupy Module holding a cubin or PTX image (the driver JIT-compiles PTX)."""
    with cupy.cuda.Device(device_id):
        module = cupy.cuda.function.Module()
        data = image if image.endswith(b"\0") or image[:4] == b"\x7fELF" else image + b"\0"
        module.load(data)
        return module
