"""relaxc --target cuda in one step and in stages (-S, relaxas, --emit kernels, relaxld) give the
same .vmx: a cuda .ko for the GPU kernels and a host .ko for the shape functions (nvrtc-marked)."""

import pathlib
import subprocess
import sys

import pytest

from relax.vm.artifact import vmx

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
    # Staged files named after the source, as the one-shot names its intermediates.
    tool("relaxc", "-S", source, "-o", "dynamic_batch.vms", cwd=tmp_path)
    tool("relaxas", "dynamic_batch.vms", "-o", "dynamic_batch.vmo", cwd=tmp_path)
    tool("relaxc", "--emit", "kernels", "--target", TARGET, "dynamic_batch.vms", "-o", "dynamic_batch.cuda.ko",
         cwd=tmp_path)
    assert (tmp_path / "dynamic_batch.host.ko").exists()
    tool("relaxld", "dynamic_batch.vmo", "dynamic_batch.cuda.ko", "dynamic_batch.host.ko", "-o", "m.vmx",
         cwd=tmp_path)
    one, staged = (tmp_path / "one.vmx").read_bytes(), (tmp_path / "m.vmx").read_bytes()
    info = vmx.read(staged, "m.vmx").info
    assert [entry["name"] for entry in info.inputs] == ["dynamic_batch.vmo", "dynamic_batch.cuda.ko",
                                                        "dynamic_batch.host.ko"]
    assert [t["triple"] for t in info.targets][0] == "nvptx64-nvidia-cuda"
    stats = tool("relaxas", "--dump", "stats", "m.vmx", cwd=tmp_path).stdout
    assert "nvptx64-nvidia-cuda -mcpu=sm_80" in stats
    assert one == staged


@pytest.mark.nvrtc
def test_static_model_writes_no_host_object(tmp_path):
    tool("relaxc", "--emit", "kernels", "--target", TARGET, SAMPLES / "mlp.relax", "-o", "mlp.cuda.ko", cwd=tmp_path)
    assert (tmp_path / "mlp.cuda.ko").exists() and not (tmp_path / "mlp.host.ko").exists()
