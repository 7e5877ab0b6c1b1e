"""A cuda .ko loaded on a GPU: `get_function(name)` as the CPU KernelLibrary offers it.

Loading picks the cubin or PTX for the GPU (module.choose_image), loads it into a
cupy module once, and looks up every launch symbol of every kernel up front, so a
missing `__global__` is reported at load time rather than at the first call.
"""

from __future__ import annotations

from ...diagnostics import UserError
from .launcher import CudaKernel
from .module import choose_image, device_capability, load_module


class CudaKernelLibrary:
    def __init__(self, kernel_object, cupy, name: str = "<kernels>", device_id: int = 0):
        self.name = name
        self.image_kind, self.target_index, image = choose_image(
            kernel_object, device_capability(cupy, device_id), name)
        try:
            self.module = load_module(cupy, image, device_id)
        except Exception as error:  # noqa: BLE001 - the driver's refusal, said plainly
            raise UserError(f"'{name}': the GPU driver cannot load its {self.image_kind}: "
                            f"{type(error).__name__}: {error}") from None
        self.kernels: dict[str, CudaKernel] = {}

        def allocate(nbytes: int):
            with cupy.cuda.Device(device_id):
                return cupy.empty(nbytes, dtype=cupy.uint8)

        for info in kernel_object.kernels:
            functions = {}
            for launch in getattr(info, "launches", None) or ():
                try:
                    functions[launch.symbol] = self.module.get_function(launch.symbol)
                except Exception:  # noqa: BLE001 - cupy raises the driver's not-found error
                    raise UserError(f"'{name}': kernel '{info.name}' launches '{launch.symbol}', "
                                    f"which its GPU code does not define") from None
            self.kernels[info.name] = CudaKernel(info, functions, allocate)

    def get_function(self, name: str):
        return self.kernels.get(name)
