"""The VirtualMachine on a cuda device: what changes when devices[0] is a GPU.

    vm = relax.VirtualMachine(exe, "cuda")     # devices [cuda:0, cpu], as TVM's VM

`attach(vm)` is called once by the VM's constructor when its first device is cuda.
It imports cupy (or refuses with a UserError naming the missing extra, or saying
no GPU is visible), loads the executable's cuda kernel objects on the GPU (their
kernels are resolved before the host .ko's, which hold the shape functions that run
on the CPU's shape heap), uploads the constants once, and replaces the VM's
argument binding and Python call path by ones that copy numpy inputs to the GPU and
results back to numpy. Nothing of this runs for a CPU VM: its paths stay as they are.
"""

from __future__ import annotations

import numpy as np

from ...diagnostics import UserError
from ...runtime.cuda.library import CudaKernelLibrary
from ...runtime.cuda.support import import_cupy
from ...runtime.cuda.tensors import is_device_array, to_device, to_host


def device_kernel_objects(exe) -> list:
    """(name, decoded KernelObject) of the executable's cuda kernel objects."""
    return list(exe.device_kernel_objects)


def refuse_cpu(exe) -> None:
    """A CPU VM for an executable whose kernels are GPU code is refused, saying what to do."""
    objects = device_kernel_objects(exe)
    if objects and not _has_host_versions(exe, objects):
        archs = ", ".join(dict.fromkeys(t.cpu for _, ko in objects for t in ko.targets))
        raise UserError(f"this executable's kernels are GPU code (cuda {archs}); "
                        "run it on device cuda (relaxrun --device cuda, VirtualMachine(exe, 'cuda'))")


def _has_host_versions(exe, objects) -> bool:
    names = {kernel.name for _, ko in objects for kernel in ko.kernels}
    return all(any(library.get_function(name) is not None for library in exe.imports) for name in names)


def attach(vm) -> None:
    device = vm.devices[0]
    if not device_kernel_objects(vm.exe) and vm.exe.imports:
        raise UserError(f"this executable's kernels are CPU code; to run on device {device} build it for "
                        "cuda (relaxc --target \"cuda -arch=sm_XY\", relax.build(mod, \"cuda\"))")
    cupy = import_cupy(f"device {device}")
    vm._cupy = cupy
    with cupy.cuda.Device(device.device_id):
        vm._device_libraries = [CudaKernelLibrary(ko, cupy, name, device.device_id)
                                for name, ko in device_kernel_objects(vm.exe)]
    gpu = cupy.cuda.Device(device.device_id)
    if device.device_id != 0:
        gpu.use()  # kernels launch on the current device: make it this VM's GPU
    vm._synchronize = gpu.synchronize  # vm.profile times each call with the GPU idle
    vm._bind = _device_bind(vm, vm._bind)
    vm._call_from_python = _device_call(vm)


def upload_constants(vm, constants) -> list:
    """The constant pool with every tensor copied to the GPU once (for this VM)."""
    cupy = vm._cupy
    with cupy.cuda.Device(vm.devices[0].device_id):
        return [to_device(value, cupy) if isinstance(value, np.ndarray) else value for value in constants]


def _to_device_values(value, cupy):
    if isinstance(value, np.ndarray) or is_device_array(value):
        return to_device(value, cupy)
    if value.__class__ is tuple:
        return tuple(_to_device_values(item, cupy) for item in value)
    return value


def _device_bind(vm, host_bind):
    cupy = vm._cupy
    device_id = vm.devices[0].device_id

    def bind(function, args, kwargs):
        bound = host_bind(function, args, kwargs)
        with cupy.cuda.Device(device_id):
            return tuple(_to_device_values(value, cupy) for value in bound)

    return bind


def _device_call(vm):
    def call(function, args, kwargs):
        return to_host(vm._execute(function, vm._bind(function, args, kwargs)))

    return call
