"""bench/e2e.py: relaxrun's median VM call and its check against the sample's expected
outputs, read from `relaxrun --json`, for any --repeat (one run included)."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def e2e(bench_script):
    return bench_script("e2e")


@pytest.fixture(scope="module")
def mlp_vmx(tmp_path_factory):
    vmx = tmp_path_factory.mktemp("e2e") / "mlp.vmx"
    subprocess.run([sys.executable, "-m", "relaxc", str(ROOT / "samples" / "mlp.relax"), "-o", str(vmx)],
                   check=True, cwd=ROOT)
    return vmx


@pytest.mark.parametrize("repeat", [1, 3])
def test_relaxrun_median_reads_the_time_and_the_check(e2e, mlp_vmx, repeat):
    seconds, check = e2e.relaxrun_median("mlp", mlp_vmx, repeat)
    assert check == "ok"
    assert seconds is not None and seconds > 0
