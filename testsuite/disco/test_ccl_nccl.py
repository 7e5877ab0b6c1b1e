"""The NCCL communicator: importable and checkable without a GPU; the collectives themselves need two GPUs."""

import numpy as np
import pytest

from relax.diagnostics import UserError
from relax.disco import ccl_nccl


def _nccl_available() -> bool:
    try:
        ccl_nccl.nccl_module()
    except UserError:
        return False
    import cupy

    return cupy.cuda.runtime.getDeviceCount() >= 2


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
    if _nccl_available():
        pytest.skip("NCCL is available here")
    with pytest.raises(UserError, match="'nccl' communicator needs"):
        ccl_nccl.make_unique_id()


@pytest.mark.skipif(not _nccl_available(), reason="needs cupy with NCCL and two GPUs")
def test_threaded_session_over_nccl():
    import relax.disco as disco

    with disco.ThreadedSession(2, ccl="nccl") as session:
        shards = np.arange(8, dtype="float32").reshape(2, 4)
        reduced = session.allreduce(session.scatter(shards), "avg").debug_get_from_remote(1)
        np.testing.assert_allclose(reduced, shards.mean(0, keepdims=True), rtol=1e-6)
        gathered = session.allgather(session.scatter(shards)).debug_get_from_remote(0)
        np.testing.assert_array_equal(gathered, shards)
