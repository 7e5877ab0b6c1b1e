"""relaxc --target cuda in one step and in stages (-S, relaxas, --emit kernels, relaxld) give the
same .vmx: a cuda .ko for the GPU kernels and a host .ko for the shape functions (nvrtc-marked)."""

import pathlib
import subprocess
import sys

import pytest

from relax.vm import vmx

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
TARGET = "cuda -arch=sm_80"


def tool(name, *args, cwd):
    result = subprocess.run([sys.executable, "-m", name, *map(str, args)], cwd=cwd,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.nvrtc
def test_staged_cuda_build_equals_one_shot(tmp_path):
    source = SAMPLES / "dynamic_batch.relax"
    tool("relaxc", source, "--target", TARGET, "-o", "one.vmx", cwd=tmp_path)
    tool("relaxc", "-S", source, "-o", "m.vms", cwd=tmp_path)
    tool("relaxas", "m.vms", "-o", "m.vmo", cwd=tmp_path)
    tool("relaxc", "--emit", "kernels", "--target", TARGET, "m.vms", "-o", "m.cuda.ko", cwd=tmp_path)
    assert (tmp_path / "m.host.ko").exists()
    tool("relaxld", "m.vmo", "m.cuda.ko", "m.host.ko", "-o", "m.vmx", cwd=tmp_path)
    one, staged = (tmp_path / "one.vmx").read_bytes(), (tmp_path / "m.vmx").read_bytes()
    info = vmx.read(staged, "m.vmx").info
    assert [entry["name"] for entry in info.inputs] == ["m.vmo", "m.cuda.ko", "m.host.ko"]
    assert [t["triple"] for t in info.targets][0] == "nvptx64-nvidia-cuda"
    stats = tool("relaxas", "--dump", "stats", "m.vmx", cwd=tmp_path).stdout
    assert "nvptx64-nvidia-cuda -mcpu=sm_80" in stats
    # The one-shot names its intermediates after its output: one.vmo, one.cuda.ko, one.host.ko.
    assert vmx.read(one, "one.vmx").info.symbols == info.symbols
    assert vmx.read(one, "one.vmx").kernel_objects == vmx.read(staged, "m.vmx").kernel_objects


@pytest.mark.nvrtc
def test_static_model_writes_no_host_object(tmp_path):
    tool("relaxc", "--emit", "kernels", "--target", TARGET, SAMPLES / "mlp.relax", "-o", "mlp.cuda.ko", cwd=tmp_path)
    assert (tmp_path / "mlp.cuda.ko").exists() and not (tmp_path / "mlp.host.ko").exists()
