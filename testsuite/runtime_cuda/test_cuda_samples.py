"""Every sample on the GPU (gpu-marked) and built for sm_80 and sm_90 (nvrtc-marked: NVRTC,
no GPU needed): outputs against samples/data (what TVM computed), symbolic batch sizes,
and the artifact's manifest listing the cuda target next to its host."""

import pathlib

import numpy as np
import pytest

from relax.build import build, lower
from relax.codegen.cuda.host_kernels import split_kernels
from relax.driver.compile import parse_source
from relax.runtime import register_func
from relax.vm import VirtualMachine
from sample_names import ARTIFACT_SAMPLES

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
NAMES = ARTIFACT_SAMPLES


def _codegen_ready():
    try:
        from relax.codegen import cuda
    except ImportError:
        return False
    return hasattr(cuda, "build_cuda_kernel_object")


needs_codegen = pytest.mark.skipif(not _codegen_ready(), reason="relax.codegen.cuda is not in this tree yet")


@pytest.fixture(autouse=True)
def sample_packed_functions():
    """samples/packed_call.relax's host functions; they take what the VM holds (cupy on a GPU)."""
    def scale_by_two(x):
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
        out.append(np.asarray(value))
    return out


@needs_codegen
@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", NAMES)
def test_sample_builds_for_cuda(name, arch, tmp_path):
    from relax.vm.artifact import vmx

    exe = build(parse_source(str(SAMPLES / f"{name}.relax")), f"cuda -arch={arch}")
    path = tmp_path / f"{name}.vmx"
    exe.export(str(path))
    info = vmx.read(path.read_bytes(), str(path)).info
    cuda = [t for t in info.targets if t["triple"] == "nvptx64-nvidia-cuda"]
    assert [t["cpu"] for t in cuda] == [arch]  # every sample has GPU kernels
    names = [entry["name"] for entry in info.inputs]
    assert names[:2] == [f"{name}.vmo", f"{name}.cuda.ko"] and names[2:] in ([], [f"{name}.host.ko"])
    [(_, kernel_object)] = exe.device_kernel_objects
    assert kernel_object.objects and all(bytes(o[:4]) == b"\x7fELF" for o in kernel_object.objects.values())
    assert all(kernel.launches for kernel in kernel_object.kernels)
    kernels = {s["name"] for s in info.symbols if s["resolution"] == "kernel"}
    device, host = split_kernels(lower(parse_source(str(SAMPLES / f"{name}.relax")), 2))
    assert {k.name for k in kernel_object.kernels} == set(device) and kernels == set(device) | set(host)


@needs_codegen
@pytest.mark.gpu
@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("name", NAMES)
def test_sample_on_gpu_matches_tvm(name, opt_level):
    mod = parse_source(str(SAMPLES / f"{name}.relax"))
    inputs = np.load(SAMPLES / "data" / f"{name}.inputs.npz")
    expected = np.load(SAMPLES / "data" / f"{name}.expected.npz")
    vm = VirtualMachine(build(mod, "cuda", opt_level), "cuda")
    outputs = flatten(vm["main"](*[inputs[p.name_hint] for p in mod["main"].params]), [])
    assert len(outputs) == len(expected.files)
    for output, key in zip(outputs, sorted(expected.files)):
        assert isinstance(output, np.ndarray)
        np.testing.assert_allclose(output, expected[key], rtol=1e-4, atol=1e-4, err_msg=f"{name} {key}")


@needs_codegen
@pytest.mark.gpu
@pytest.mark.parametrize("batch", [1, 3, 17])
def test_dynamic_batch_on_gpu(batch):
    mod = parse_source(str(SAMPLES / "dynamic_batch.relax"))
    inputs = np.load(SAMPLES / "data" / "dynamic_batch.inputs.npz")
    params = [p.name_hint for p in mod["main"].params]
    args = [inputs[name] for name in params]
    rows = np.random.default_rng(batch).standard_normal((batch,) + args[0].shape[1:]).astype(args[0].dtype)
    cpu = VirtualMachine(build(mod, "llvm"), "cpu")["main"](rows, *args[1:])
    gpu = VirtualMachine(build(mod, "cuda"), "cuda")["main"](rows, *args[1:])
    np.testing.assert_allclose(flatten(gpu, [])[0], flatten(cpu, [])[0], rtol=1e-4, atol=1e-5)
