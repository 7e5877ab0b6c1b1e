"""relaxrun --workers in process: refused combinations exit 2 before any worker starts, and
--json --profile reports worker 0's results with each worker's time in its collectives."""

import json
import pathlib

import numpy as np
import pytest

from relaxrun.cli import main

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture(scope="module")
def tp_vmx(tmp_path_factory):
    from relax.build import build
    from relax.driver.compile import parse_source

    path = tmp_path_factory.mktemp("tp") / "tp_mlp.vmx"
    build(parse_source(str(SAMPLES / "tp_mlp.relax"))).export(str(path))
    return str(path)


@pytest.mark.parametrize("args, message", [
    (["--workers", "2", "--trace"], "--trace cannot be used with --workers (it traces one VM)"),
    (["--workers", "2", "--exec-mode", "interp"], "--exec-mode cannot be used with --workers"),
    (["--mpi", "--workers", "2"], "--mpi takes the number of workers from mpiexec -n; drop --workers"),
    (["--mpi", "--ccl", "threads"], "--mpi runs one worker per rank: --ccl threads needs --workers N instead"),
    (["--workers", "2", "--device", "cuda"], "--device cuda with workers needs --ccl nccl"),
    (["--workers", "2", "--ccl", "nccl", "--device", "cuda:1"], "with --ccl nccl worker i runs on cuda:i"),
])
def test_refused_combinations_exit_2(capsys, tp_vmx, args, message):
    assert main([*args, tp_vmx]) == 2
    err = capsys.readouterr().err
    assert err.startswith("relaxrun: error: ") and message in err and "Traceback" not in err


def test_json_profile_on_threads(capsys, tp_vmx):
    code = main(["--workers", "2", "--ccl", "threads", "--json", "--profile", tp_vmx,
                 "--input", f"@{SAMPLES / 'data' / 'tp_mlp.inputs.npz'}"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and (document["workers"], document["ccl"]) == (2, "threads")
    expected = np.load(SAMPLES / "data" / "tp_mlp.expected.npz")["00"]
    np.testing.assert_allclose(document["results"][0]["values"], expected, rtol=1e-5, atol=1e-6)
    assert [entry["worker"] for entry in document["profile"]] == [0, 1]
    for entry in document["profile"]:
        calls = {name: value["calls"] for name, value in entry["collectives"].items()}
        assert calls == {"allreduce": 1, "scatter_from_worker0": 3}
        assert 0 < entry["collective_us"] <= entry["total_us"]


@pytest.mark.gpu
def test_one_gpu_worker_over_nccl(capsys, tmp_path):
    """--ccl nccl: a ProcessSession whose worker runs a cuda artifact and its collectives on
    cuda:0 through NCCL (one worker: every GPU machine has one)."""
    from relax.build import build
    from relax.disco.ccl_nccl import nccl_module
    from relax.script import parse

    nccl_module()  # the gpu marker checked the GPU; a cupy without NCCL is a setup problem to see
    program = """@R.function
def main(x: R.Tensor((4, 3), "float32")):
    a = R.ccl.allreduce(x, op_type="sum")
    b = R.ccl.scatter_from_worker0(a, num_workers=1, axis=0)
    return R.multiply(b, R.const(2.0, "float32"))
"""
    path = tmp_path / "ccl_cuda.vmx"
    build(parse(program, "ccl_cuda.relax"), "cuda").export(str(path))
    x = np.arange(12, dtype="float32").reshape(4, 3)
    np.save(tmp_path / "x.npy", x)
    code = main(["--workers", "1", "--ccl", "nccl", "--device", "cuda", "--json", str(path),
                 "--input", str(tmp_path / "x.npy")])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["ccl"] == "nccl"
    np.testing.assert_array_equal(document["results"][0]["values"], 2 * x)
