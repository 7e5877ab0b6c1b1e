"""Devices: DLPack's (device type, device id) pair, spelled `cpu`, `cpu:0`, `cuda:1`.

The VM always holds a CPU device for shape work (the shape heap lives there), as
TVM's VM does: it is the last entry of the VM's device list.
"""

from __future__ import annotations

from ..diagnostics import UserError
from ..records import record

# DLPack device type codes (dlpack.h).
CPU, CUDA = 1, 2
_TYPE_NAMES = {CPU: "cpu", CUDA: "cuda"}
_NAME_TYPES = {"cpu": CPU, "llvm": CPU, "cuda": CUDA, "gpu": CUDA}


@record
class Device:
    device_type: int
    device_id: int = 0

    @staticmethod
    def parse(spec) -> "Device":
        """Accepts a Device, 'cpu', 'cpu:0', 'cuda', 'cuda:1' (or TVM's 'llvm')."""
        if isinstance(spec, Device):
            return spec
        if not isinstance(spec, str):
            raise UserError(f"not a device: {spec!r}")
        name, _, index = spec.partition(":")
        device_type = _NAME_TYPES.get(name.strip().lower())
        if device_type is None:
            raise UserError(f"unknown device '{spec}' (expected cpu or cuda, optionally ':N')")
        if index and not index.isdigit():
            raise UserError(f"bad device index in '{spec}'")
        return Device(device_type, int(index or 0))

    @property
    def kind(self) -> str:
        return _TYPE_NAMES.get(self.device_type, f"device{self.device_type}")

    def __str__(self) -> str:
        return f"{self.kind}:{self.device_id}"


def cpu(device_id: int = 0) -> Device:
    return Device(CPU, device_id)
