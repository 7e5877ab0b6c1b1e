"""Disco sessions of 1, 2 and 3 workers over threads and processes: data in, programs, collectives vs numpy."""

import numpy as np
import pytest

KINDS = [(kind, workers) for kind in ("threads", "processes") for workers in (1, 2, 3)]
REDUCTIONS = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}


def _shards(workers, dtype="float32"):
    """One (2, 3) array per worker, distinct values (float32 math on them is exact)."""
    return [(np.arange(6).reshape(2, 3) + 1 + 10 * rank).astype(dtype) for rank in range(workers)]


@pytest.fixture(params=KINDS, ids=[f"{k}-{n}" for k, n in KINDS])
def session(request, sessions):
    return sessions(*request.param)


def test_broadcast_scatter_empty(session):
    n = session.num_workers
    array = np.arange(6 * n, dtype="float32").reshape(2 * n, 3)
    copies, chunks = session.broadcast(array), session.scatter(array, axis=0)
    columns = session.scatter(np.arange(4 * n).reshape(2, 2 * n), axis=1)
    for rank in range(n):
        np.testing.assert_array_equal(copies.debug_get_from_remote(rank), array)
        np.testing.assert_array_equal(chunks.debug_get_from_remote(rank), array[2 * rank:2 * rank + 2])
        np.testing.assert_array_equal(columns.debug_get_from_remote(rank),
                                      np.arange(4 * n).reshape(2, 2 * n)[:, 2 * rank:2 * rank + 2])
    empty = session.empty((2, 5), "int32").debug_get_from_remote(n - 1)
    assert empty.shape == (2, 5) and empty.dtype == np.int32


def test_vm_module_runs_on_every_worker(session, add_vmx):
    n = session.num_workers
    x, y = np.random.default_rng(0).random((2, 2 * n, 3), dtype=np.float32)
    module = session.load_vm_module(add_vmx)
    z = module["main"](session.scatter(x), session.scatter(y))
    for rank in range(n):
        np.testing.assert_allclose(z.debug_get_from_remote(rank), (x + y)[2 * rank:2 * rank + 2], rtol=1e-6)


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "avg"])
def test_allreduce(session, op):
    shards = _shards(session.num_workers)
    stacked = np.stack(shards)
    expected = stacked.sum(0) / np.float32(len(shards)) if op == "avg" else REDUCTIONS[op](stacked, axis=0)
    result = session.allreduce(session.scatter(np.concatenate(shards)), op)
    for rank in range(session.num_workers):
        np.testing.assert_allclose(result.debug_get_from_remote(rank), expected, rtol=1e-6)


def test_allreduce_avg_of_integers_truncates(session):
    shards = [np.array([-7, 7, 5], "int32") + rank for rank in range(session.num_workers)]
    total = np.sum(shards, axis=0)
    expected = (np.sign(total) * (np.abs(total) // len(shards))).astype("int32")  # C division, as TVM
    result = session.allreduce(session.scatter(np.concatenate(shards)), "avg").debug_get_from_remote(0)
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, expected)


def test_allgather(session):
    shards = _shards(session.num_workers, "int64")
    gathered = session.allgather(session.scatter(np.concatenate(shards)))
    np.testing.assert_array_equal(gathered.debug_get_from_remote(session.num_workers - 1), np.concatenate(shards))


def test_communicator_broadcast_and_scatter_in_workers(session):
    """The worker's bound context reaches the communicator from a function called in the worker."""
    n = session.num_workers
    mine = session.get_global_func("disco_test.worker_id")()
    per_worker = session.scatter(np.arange(3 * n * n, dtype="float64").reshape(n * n, 3) + 1)
    from_zero = session.get_global_func("disco_test.broadcast")(per_worker)
    chunk = session.get_global_func("disco_test.scatter")(per_worker)
    for rank in range(n):
        np.testing.assert_array_equal(mine.debug_get_from_remote(rank), [rank, n])
        np.testing.assert_array_equal(from_zero.debug_get_from_remote(rank), per_worker.debug_get_from_remote(0))
        np.testing.assert_array_equal(chunk.debug_get_from_remote(rank),
                                      per_worker.debug_get_from_remote(0)[rank:rank + 1])
    session.sync_worker_0()
