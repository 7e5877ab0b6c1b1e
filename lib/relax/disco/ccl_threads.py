"""Collectives between the threads of one process (ThreadedSession's CPU communicator).

The workers share memory, so nothing is transported: each worker posts its buffer in a
shared slot, a barrier makes every slot visible, each worker reads its peers' buffers
and computes its own result with numpy, and a second barrier keeps the slots alive until
everyone has read them. Every worker sees every slot, so all of them find a shape
mismatch and raise the same error: none is left waiting.

When one worker fails outside a collective and its peers have not answered after a grace
period, the session aborts the group's barrier so that the peers waiting in it raise
CollectiveAborted instead of hanging, then resets it.
"""

from __future__ import annotations

import threading
from functools import reduce

import numpy as np

from .ccl import CollectiveAborted, check_buffers, check_reduce_op, divide_in_dtype, mismatch_message

NUMPY_REDUCTIONS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum, "avg": np.add}
WAIT_SECONDS = 600.0  # a barrier wait longer than this is a deadlock, not a slow peer


class ThreadGroup:
    """The state the workers of one ThreadedSession share: a barrier and one slot per worker."""

    def __init__(self, num_workers: int):
        self.num_workers = num_workers
        self.slots: list = [None] * num_workers
        self._barrier = threading.Barrier(num_workers, timeout=WAIT_SECONDS)

    def wait(self) -> None:
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            raise CollectiveAborted("a collective was abandoned because another worker failed") from None

    def abort(self) -> None:
        """Releases every worker waiting in a collective (they raise CollectiveAborted)."""
        self._barrier.abort()

    def reset(self) -> None:
        """Makes the group usable again after an abort (no worker may be waiting)."""
        self._barrier.reset()
        self.slots = [None] * self.num_workers

    def communicator(self, worker_id: int) -> ThreadCommunicator:
        return ThreadCommunicator(self, worker_id)


class ThreadCommunicator:
    """The Communicator of worker `worker_id` in a ThreadGroup."""

    def __init__(self, group: ThreadGroup, worker_id: int):
        self.group = group
        self.worker_id = worker_id
        self.num_workers = group.num_workers

    def _exchange(self, collective: str, send) -> list:
        """Every worker's `send`, in rank order, after checking that they agree in shape and dtype."""
        group = self.group
        group.slots[self.worker_id] = send
        group.wait()
        peers = list(group.slots)
        group.wait()  # nobody overwrites its slot before all have copied the list
        message = mismatch_message(collective, [(peer.shape, str(peer.dtype)) for peer in peers])
        if message is not None:
            raise ValueError(message)
        return peers

    def allreduce(self, send, recv, op: str) -> None:
        check_reduce_op(op)
        check_buffers("allreduce", send, recv, send.shape)
        peers = self._exchange("allreduce", send)
        result = reduce(NUMPY_REDUCTIONS[op], peers[1:], np.array(peers[0], copy=True))
        if op == "avg":
            result = divide_in_dtype(result, self.num_workers)
        self.group.wait()  # peers may read `send` (which can be `recv`) until all have reduced
        recv[...] = result

    def allgather(self, send, recv) -> None:
        check_buffers("allgather", send, recv, (send.shape[0] * self.num_workers, *send.shape[1:]))
        peers = self._exchange("allgather", send)
        gathered = np.concatenate(peers, axis=0)
        self.group.wait()
        recv[...] = gathered

    def broadcast_from_worker0(self, send, recv) -> None:
        group = self.group
        if self.worker_id == 0:
            group.slots[0] = send
        group.wait()
        source = group.slots[0]
        if tuple(source.shape) != tuple(recv.shape) or source.dtype != recv.dtype:
            group.wait()
            raise ValueError(f"broadcast_from_worker0: worker 0 sends {tuple(source.shape)} {source.dtype} but "
                             f"worker {self.worker_id} receives into {tuple(recv.shape)} {recv.dtype}")
        value = np.array(source, copy=True)
        group.wait()
        recv[...] = value

    def scatter_from_worker0(self, send, recv) -> None:
        group = self.group
        if self.worker_id == 0:
            group.slots[0] = send
        group.wait()
        source = group.slots[0]
        chunk_rows = source.shape[0] // self.num_workers if source.ndim else 0
        expected = (chunk_rows, *source.shape[1:])
        bad = (source.ndim == 0 or source.shape[0] % self.num_workers
               or tuple(recv.shape) != expected or recv.dtype != source.dtype)
        if bad:
            group.wait()
            raise ValueError(f"scatter_from_worker0: worker 0 sends {tuple(source.shape)} {source.dtype}, which does "
                             f"not split into {self.num_workers} chunks of worker {self.worker_id}'s "
                             f"{tuple(recv.shape)} {recv.dtype}")
        chunk = np.array(source[self.worker_id * chunk_rows:(self.worker_id + 1) * chunk_rows], copy=True)
        group.wait()
        recv[...] = chunk

    def barrier(self) -> None:
        self.group.wait()
