"""The cuda VM's plumbing without a GPU: a stand-in cupy whose "device" arrays are numpy arrays
marked with __cuda_array_interface__, and whose GPU kernels are the same kernels built for
the CPU. What runs for real: devices [cuda, cpu], allocation on device 0 through the cuda
allocators, constants uploaded once, inputs copied to the device, shape checks and shape
functions on the host heap, results copied back to numpy."""

import contextlib
import pathlib

import numpy as np
import pytest

import relax.vm.machine.cuda_device as cuda_device
from relax.build import build
from relax.driver.compile import parse_source
from relax.runtime import register_func
from relax.runtime.cuda.allocator import CUDA_ALLOCATORS
from relax.runtime.cuda.tensors import is_device_array
from relax.vm import VirtualMachine
from sample_names import ARTIFACT_SAMPLES

# The stand-in cupy and kernel library patch the runtime only: the builds are the session's.
pytestmark = pytest.mark.shared_builds

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
NAMES = ARTIFACT_SAMPLES


class DeviceArray(np.ndarray):
    """A numpy array that the runtime takes for a GPU array."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ctypes.data, False), "version": 3}

    def get(self):
        return np.array(self, copy=True).view(np.ndarray)


class FakeCupy:
    """The parts of cupy the runtime uses, on host memory; counts the uploads."""

    uint8 = np.uint8

    def __init__(self):
        self.uploads = 0

        class Pool:
            def __init__(self):
                self.total = 0

            def malloc(self, nbytes):
                self.total += nbytes
                return np.zeros(nbytes, np.uint8)

            def total_bytes(self):
                return self.total

        fake = self
        self.synchronized = 0

        class Device(contextlib.nullcontext):
            def __init__(self, device_id=0):
                super().__init__()

            def synchronize(self):
                fake.synchronized += 1

        class Cuda:
            MemoryPool = Pool

        Cuda.Device = Device

        self.cuda = Cuda

    def ndarray(self, shape, dtype, memptr):
        return memptr.view(DeviceArray)

    def empty(self, nbytes, dtype):
        return np.zeros(nbytes, dtype).view(DeviceArray)

    def asarray(self, value):
        self.uploads += 1
        return np.array(value, copy=True).view(DeviceArray)

    def ascontiguousarray(self, value):
        return np.ascontiguousarray(value).view(DeviceArray)


@pytest.fixture(autouse=True)
def sample_packed_functions():
    """samples/packed_call.relax's host functions; on a cuda VM they get device arrays."""
    def scale_by_two(x):
        assert is_device_array(x)
        return x * x.dtype.type(2)

    def add_one_dps(x, out):
        out[...] = x + x.dtype.type(1)

    register_func("samples.scale_by_two", scale_by_two, override=True)
    register_func("samples.add_one_dps", add_one_dps, override=True)


def flatten(value, out):
    if isinstance(value, tuple):
        for item in value:
            flatten(item, out)
    else:
        out.append(value)
    return out


@pytest.fixture
def fake_gpu(monkeypatch):
    """A FakeCupy, and the cuda VM's kernel libraries replaced by the CPU build's kernels,
    wrapped to insist on device arrays for buffers."""
    cupy = FakeCupy()
    monkeypatch.setattr(cuda_device, "import_cupy", lambda what: cupy)
    import relax.runtime.cuda.support as support

    monkeypatch.setattr(support, "import_cupy", lambda what: cupy)
    calls = []

    class DeviceLibrary:
        def __init__(self, kernel_object, cupy_module, name, device_id):
            self.names = {kernel.name for kernel in kernel_object.kernels}

        def get_function(self, name):
            if name not in self.names:
                return None

            def call(*args):
                for arg in args:
                    if isinstance(arg, np.ndarray):
                        assert is_device_array(arg), f"kernel '{name}' got a host array"
                calls.append(name)
                return cpu_kernels[0].get_function(name)(*args)

            return call

    cpu_kernels = []
    monkeypatch.setattr(cuda_device, "CudaKernelLibrary", DeviceLibrary)
    return cupy, cpu_kernels, calls


CASES = ([(name, "pooled", "interp") for name in NAMES]
         + [(name, memory, mode) for name in ("dynamic_batch", "control_flow", "tuples")
            for memory, mode in (("naive", "interp"), ("pooled", "compiled"))])


@pytest.mark.parametrize("name,memory,exec_mode", CASES)
def test_sample_through_the_cuda_vm(fake_gpu, name, memory, exec_mode):
    cupy, cpu_kernels, calls = fake_gpu
    mod = parse_source(str(SAMPLES / f"{name}.relax"))
    cpu_kernels.append(build(mod, "llvm").imports[0])
    exe = build(mod, "cuda -arch=sm_90")
    vm = VirtualMachine(exe, "cuda", memory=memory, exec_mode=exec_mode)
    assert [str(d) for d in vm.devices] == ["cuda:0", "cpu:0"]
    uploads = cupy.uploads
    inputs = np.load(SAMPLES / "data" / f"{name}.inputs.npz")
    expected = np.load(SAMPLES / "data" / f"{name}.expected.npz")
    args = [inputs[p.name_hint] for p in mod["main"].params]
    for _ in range(2):
        result = vm["main"](*args)
        outputs = flatten(result, [])
        assert len(outputs) == len(expected.files)
        for output, key in zip(outputs, sorted(expected.files)):
            assert type(output) is np.ndarray  # copied back to numpy
            np.testing.assert_allclose(output, expected[key], rtol=1e-4, atol=1e-4)
    assert cupy.uploads - uploads == 2 * len(args)  # inputs every call, constants never again
    assert calls and set(calls) <= {k.name for _, ko in exe.device_kernel_objects for k in ko.kernels}
    assert isinstance(vm.allocator(0), CUDA_ALLOCATORS[memory]) and vm.allocator(0).allocated_bytes > 0


def test_saved_function_keeps_results_on_the_device(fake_gpu):
    cupy, cpu_kernels, _ = fake_gpu
    mod = parse_source(str(SAMPLES / "mlp.relax"))
    cpu_kernels.append(build(mod, "llvm").imports[0])
    vm = VirtualMachine(build(mod, "cuda -arch=sm_90"), "cuda")
    inputs = np.load(SAMPLES / "data" / "mlp.inputs.npz")
    vm.save_function("main", "bench", *[inputs[p.name_hint] for p in mod["main"].params])
    uploads = cupy.uploads
    result = vm["bench"]()
    first = result[0] if isinstance(result, tuple) else result
    assert is_device_array(first) and cupy.uploads == uploads


def test_profile_waits_for_the_gpu_around_each_call(fake_gpu):
    cupy, cpu_kernels, calls = fake_gpu
    mod = parse_source(str(SAMPLES / "mlp.relax"))
    cpu_kernels.append(build(mod, "llvm").imports[0])
    vm = VirtualMachine(build(mod, "cuda -arch=sm_90"), "cuda")
    inputs = np.load(SAMPLES / "data" / "mlp.inputs.npz")
    report = vm.profile("main", *[inputs[p.name_hint] for p in mod["main"].params])
    kernel_rows = [row for row in report.rows if row.name in set(calls)]
    assert kernel_rows and cupy.synchronized >= 2 * sum(row.calls for row in report.rows)
