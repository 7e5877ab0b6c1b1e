"""A cuda artifact without a GPU: the host/device kernel split, the link of a cuda .ko with
a host .ko, loading it, and the clear refusals when it cannot run here."""

import dataclasses
import importlib.util
import pathlib

import pytest

from elf_objects import minimal_object
from relax.build import lower
from relax.codegen.cuda.host_kernels import is_host_kernel, split_kernels
from relax.codegen.build_kernels import build_kernel_object
from relax.diagnostics import DiagnosticError, UserError
from relax.driver.compile import parse_source
from relax.ir.module import IRModule
from relax.runtime.kernels import container
from relax.runtime.kernels.metadata import LaunchInfo
from relax.target import host_target
from relax.vm import VirtualMachine
from relax.vm.codegen.codegen_vm import generate
from relax.vm.artifact.load_export import load_artifact
from relax.vm.artifact.linker import LinkInput, link

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"


def lowered(name):
    return lower(parse_source(str(SAMPLES / f"{name}.relax")), 2)


def fake_cuda_ko(funcs, arch="sm_90"):
    """A cuda .ko whose manifest defines the kernels of `funcs` ({name: PrimFunc}) with their
    parameters (the linker compares the calls with them); the GPU code is not looked at before loading."""
    from relax.codegen.kernel_codegen import kernel_info
    from relax.ir import tir

    kernels = tuple(dataclasses.replace(kernel_info(name, func, [], tir.const(0, "int64"), False),
                                        launches=(LaunchInfo(f"relaxk_{name}", (1, 1, 1), (1, 1, 1)),))
                    for name, func in sorted(funcs.items()))
    target = container.TargetEntry("nvptx64-nvidia-cuda", arch, "", 1, "cubin")
    return container.write(container.KernelObject((target,), kernels, {0: minimal_object("nvptx64-nvidia-cuda")}, {},
                                                  ptx={0: b"// not really PTX"}))


def _without(funcs: dict, name: str) -> dict:
    return {key: func for key, func in funcs.items() if key != name}


@pytest.fixture(scope="module")
def dynamic_batch():
    mod = lowered("dynamic_batch")
    device, host = split_kernels(mod)
    host_ko = build_kernel_object(IRModule.from_functions(host), [host_target()])
    return mod, device, host, host_ko


def test_shape_functions_are_host_kernels(dynamic_batch):
    mod, device, host, _ = dynamic_batch
    assert sorted(host) == ["shape_func"] and "softmax" in device
    assert all(not is_host_kernel(name, func) for name, func in device.items())
    assert set(device) | set(host) == set(mod.prim_funcs())


def test_static_model_has_no_host_kernels():
    device, host = split_kernels(lowered("mlp"))
    assert host == {} and len(device) == 6


def test_cuda_ko_and_host_ko_link_together(dynamic_batch):
    mod, device, _, host_ko = dynamic_batch
    result = link(LinkInput("m.vmo", generate(mod).save_to_bytes()),
                  [LinkInput("m.cuda.ko", fake_cuda_ko(device)), LinkInput("m.host.ko", host_ko)])
    resolved = {s["name"]: s.get("kernel_objects") for s in result.info.symbols if s["resolution"] == "kernel"}
    assert resolved["shape_func"] == [1] and resolved["softmax"] == [0]
    triples = [t["triple"] for t in result.info.targets]
    assert triples[0] == "nvptx64-nvidia-cuda" and triples[1] == host_target().mtriple


def test_a_kernel_missing_from_the_cuda_ko_is_undefined(dynamic_batch):
    mod, device, _, host_ko = dynamic_batch
    with pytest.raises(DiagnosticError, match="undefined reference to 'softmax'"):
        link(LinkInput("m.vmo", generate(mod).save_to_bytes()),
             [LinkInput("m.cuda.ko", fake_cuda_ko(_without(device, "softmax"))),
              LinkInput("m.host.ko", host_ko)])


def test_every_cuda_arch_must_define_every_gpu_kernel(dynamic_batch):
    mod, device, _, host_ko = dynamic_batch
    with pytest.raises(DiagnosticError, match="undefined reference to 'softmax' .* for target nvptx64-nvidia-cuda -mcpu=sm_80"):
        link(LinkInput("m.vmo", generate(mod).save_to_bytes()),
             [LinkInput("a.ko", fake_cuda_ko(device, "sm_90")),
              LinkInput("b.ko", fake_cuda_ko(_without(device, "softmax"), "sm_80")),
              LinkInput("m.host.ko", host_ko)])


@pytest.fixture(scope="module")
def cuda_artifact(dynamic_batch):
    mod, device, _, host_ko = dynamic_batch
    result = link(LinkInput("m.vmo", generate(mod).save_to_bytes()),
                  [LinkInput("m.cuda.ko", fake_cuda_ko(device)), LinkInput("m.host.ko", host_ko)])
    return result.data


def test_loading_keeps_gpu_kernels_for_the_cuda_vm(cuda_artifact):
    exe = load_artifact(cuda_artifact, "m.vmx")
    [(name, kernel_object)] = exe.device_kernel_objects
    assert name == "m.vmx(m.cuda.ko)" and kernel_object.kernel("softmax") is not None
    assert any(library.get_function("shape_func") is not None for library in exe.imports)


def test_cpu_vm_refuses_gpu_code(cuda_artifact):
    exe = load_artifact(cuda_artifact, "m.vmx")
    with pytest.raises(UserError, match=r"kernels are GPU code \(cuda sm_90\); run it on device cuda"):
        VirtualMachine(exe, "cpu")


def test_cuda_vm_without_cupy_names_the_extra(cuda_artifact, monkeypatch):
    exe = load_artifact(cuda_artifact, "m.vmx")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a))
    with pytest.raises(UserError, match=r"device cuda:0 is not available: cupy is not installed \(pip install '\.\[cuda\]'\)"):
        VirtualMachine(exe, "cuda")


def test_cuda_vm_without_a_gpu_says_so(cuda_artifact, monkeypatch):
    import relax.runtime.cuda.support as support

    class NoGPU:
        class cuda:
            class runtime:
                @staticmethod
                def getDeviceCount():
                    return 0

    monkeypatch.setitem(__import__("sys").modules, "cupy", NoGPU)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert support.cuda_problem() == "no CUDA GPU is visible"
    with pytest.raises(UserError, match="device cuda:0 is not available: no CUDA GPU is visible"):
        VirtualMachine(load_artifact(cuda_artifact, "m.vmx"), "cuda")


def test_relaxrun_device_cuda_refuses_cleanly(cuda_artifact, tmp_path, monkeypatch, capsys):
    from relaxrun.cli import main

    path = tmp_path / "m.vmx"
    path.write_bytes(cuda_artifact)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a))
    inputs = SAMPLES / "data" / "dynamic_batch.inputs.npz"
    code = main([str(path), "--device", "cuda", "--input", f"@{inputs}"])
    err = capsys.readouterr().err
    assert code == 1 and "pip install '.[cuda]'" in err and "Traceback" not in err


def test_relaxrun_on_cpu_says_to_use_the_gpu(cuda_artifact, tmp_path, capsys):
    from relaxrun.cli import main

    path = tmp_path / "m.vmx"
    path.write_bytes(cuda_artifact)
    code = main([str(path), "--input", f"@{SAMPLES / 'data' / 'dynamic_batch.inputs.npz'}"])
    err = capsys.readouterr().err
    assert code == 1 and "run it on device cuda" in err and "Traceback" not in err


def test_cuda_vm_refuses_cpu_kernels():
    from relax.build import build

    exe = build(parse_source(str(SAMPLES / "mlp.relax")), "llvm")
    with pytest.raises(UserError, match=r"kernels are CPU code; to run on device cuda:0 build it for cuda"):
        VirtualMachine(exe, "cuda")
