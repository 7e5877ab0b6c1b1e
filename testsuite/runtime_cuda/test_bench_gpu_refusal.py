"""bench/gpu.py without a usable GPU says why and exits 1 (no traceback)."""

import pathlib
import subprocess
import sys

import pytest

from relax.runtime.cuda.support import cuda_problem

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / "gpu.py"


@pytest.mark.skipif(cuda_problem() is None, reason="a GPU is visible: bench/gpu.py would run")
def test_bench_gpu_without_a_gpu_exits_1():
    result = subprocess.run([sys.executable, str(BENCH), "add"], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("gpu.py: cannot benchmark the GPU: ") and "Traceback" not in result.stderr


def test_bench_gpu_unknown_workload_is_a_usage_error():
    result = subprocess.run([sys.executable, str(BENCH), "conv"], capture_output=True, text=True)
    assert result.returncode == 2 and "unknown workload 'conv'" in result.stderr
