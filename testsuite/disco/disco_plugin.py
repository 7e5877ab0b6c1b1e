"""Functions the Disco tests call on every worker (run as a plugin by each worker process)."""

import os
import signal
import time

import numpy as np

from relax.disco import worker_context
from relax.runtime.registry import register_func


def _me() -> int:
    return worker_context.current().worker_id


@register_func("disco_test.worker_id", override=True)
def worker_id():
    return np.array([_me(), worker_context.current().num_workers], dtype="int64")


@register_func("disco_test.rows", override=True)
def rows(dtype):
    """A (worker_id + 1, 2) tensor: a different shape on every worker."""
    return np.ones((_me() + 1, 2), dtype=dtype)


@register_func("disco_test.fail_on", override=True)
def fail_on(worker):
    if _me() == worker:
        raise ValueError(f"deliberate failure on {worker}")
    return np.zeros(1, "float32")


@register_func("disco_test.fail_or_reduce", override=True)
def fail_or_reduce(worker):
    """Worker `worker` fails; the others enter an allreduce that waits for it."""
    if _me() == worker:
        raise ValueError("failed before the collective")
    buffer = np.ones(4, "float32")
    worker_context.current().ccl.allreduce(buffer, buffer, "sum")
    return buffer


@register_func("disco_test.kill_on", override=True)
def kill_on(worker):
    if _me() == worker:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.2)
    return np.zeros(1, "float32")


@register_func("disco_test.broadcast", override=True)
def broadcast(array):
    """Worker 0's `array` on every worker, through the communicator."""
    recv = np.zeros_like(array)
    worker_context.current().ccl.broadcast_from_worker0(array if _me() == 0 else None, recv)
    return recv


@register_func("disco_test.scatter", override=True)
def scatter(array):
    """Chunk worker_id of worker 0's `array`, through the communicator."""
    ccl = worker_context.current().ccl
    recv = np.zeros((array.shape[0] // ccl.num_workers, *array.shape[1:]), array.dtype)
    ccl.scatter_from_worker0(array if _me() == 0 else None, recv)
    return recv
