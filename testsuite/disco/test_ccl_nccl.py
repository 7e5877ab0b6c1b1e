"""The NCCL communicator: importable and checkable without a GPU; the collectives themselves need two GPUs."""

import numpy as np
import pytest

from relax.diagnostics import UserError
from relax.disco import ccl_nccl


def _nccl_gpus() -> int:
    """The GPUs NCCL can use here (0 without cupy, NCCL or a GPU)."""
    try:
        ccl_nccl.nccl_module()
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no cupy, no NCCL, no driver: no GPU for these tests
        return 0


@pytest.mark.parametrize("unique_id", [bytes(range(250, 256)) + b"\x00\x7f", (-3, 0, 127, 5)])
def test_unique_id_travels_as_an_array(unique_id):
    array = ccl_nccl.unique_id_to_array(unique_id)
    assert array.dtype == np.int64
    assert ccl_nccl.unique_id_from_array(array) == unique_id


def test_datatypes_and_ops_name_nccl_constants():
    class FakeNCCL:
        NCCL_FLOAT32, NCCL_INT64 = 7, 4

    assert ccl_nccl.nccl_datatype(FakeNCCL, np.dtype("float32")) == 7
    with pytest.raises(UserError, match="NCCL has no datatype for bool"):
        ccl_nccl.nccl_datatype(FakeNCCL, np.dtype("bool"))
    assert set(ccl_nccl.NCCL_OPS) == {"sum", "prod", "min", "max", "avg"}


def test_missing_nccl_is_a_clear_error():
    if _nccl_gpus():
        pytest.skip("NCCL and a GPU are available here")
    try:
        ccl_nccl.nccl_module()
    except UserError as error:
        assert "'nccl' communicator needs" in str(error)
    else:
        pytest.skip("cupy has NCCL here (no GPU, so nothing else to check)")


@pytest.mark.gpu
@pytest.mark.parametrize("workers", [1, 2])
def test_threaded_session_over_nccl(workers):
    if _nccl_gpus() < workers:
        pytest.skip(f"needs cupy with NCCL and {workers} GPU(s)")
    import relax.disco as disco

    shards = np.arange(4 * workers, dtype="float32").reshape(workers, 4)
    with disco.ThreadedSession(workers, ccl="nccl") as session:
        for op, expected in (("sum", shards.sum(0)), ("max", shards.max(0)), ("avg", shards.mean(0))):
            reduced = session.allreduce(session.scatter(shards), op).debug_get_from_remote(workers - 1)
            np.testing.assert_allclose(reduced.reshape(-1), expected, rtol=1e-6)
        gathered = session.allgather(session.scatter(shards)).debug_get_from_remote(0)
        np.testing.assert_array_equal(gathered, shards)


ONE_WORKER_PROGRAM = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 3), dtype="float32")) -> R.Tensor((4, 3), dtype="float32"):
        a: R.Tensor((4, 3), dtype="float32") = R.ccl.allreduce(x, op_type="max", in_group=True)
        b: R.Tensor((4, 3), dtype="float32") = R.ccl.scatter_from_worker0(a, num_workers=1, axis=1)
        c: R.Tensor((4, 3), dtype="float32") = R.add(b, x)
        return c
"""


@pytest.mark.gpu
def test_program_on_the_gpu_over_nccl(tmp_path):
    """A program built for cuda calls its collectives on device buffers, through NCCL."""
    if _nccl_gpus() < 1:
        pytest.skip("needs cupy with NCCL and a GPU")
    import relax.disco as disco
    from relax.build import build
    from relax.script import parse

    path = tmp_path / "ccl_cuda.vmx"
    build(parse(ONE_WORKER_PROGRAM, "ccl_cuda.relax"), "cuda").export(str(path))
    x = np.arange(12, dtype="float32").reshape(4, 3)
    with disco.ThreadedSession(1, ccl="nccl") as session:
        result = session.load_vm_module(str(path), device="cuda")["main"](session.broadcast(x))
        np.testing.assert_array_equal(result.debug_get_from_remote(0), x + x)
