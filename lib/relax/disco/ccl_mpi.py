"""Collectives between processes over MPI (mpi4py), the CPU communicator of ProcessSession and MPISession.

Each call is one MPI buffer call on the numpy arrays themselves (`Allreduce`, `Allgather`,
`Bcast`, `Scatter`): no pickling, no copy through Python objects. avg is a SUM followed
by the division in the dtype, as TVM computes it.

MPI has no answer for ranks that pass buffers of different sizes (it truncates, aborts or
waits), so by default every call first exchanges a small fixed-size signature (the dtype
and shape) with one `Allgather` and raises the same clear error on every rank when they
differ. `verify=False` skips it, for measuring the transport alone.
"""

from __future__ import annotations

import numpy as np

from ..diagnostics import UserError
from .ccl import check_buffers, check_reduce_op, divide_in_dtype, mismatch_message

MAX_SIGNATURE_RANK = 8  # dimensions compared by the signature; deeper ones are folded into the last
DTYPES_BY_NUMBER = {np.dtype(code).num: np.dtype(code) for code in np.typecodes["All"] if code not in "OMmV"}


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError:
        raise UserError("the 'mpi' communicator needs mpi4py (pip install mpi4py mpich)") from None
    return MPI


def signature_of(array) -> np.ndarray:
    """[dtype number, ndim, dims...] padded with -1: equal for two arrays of one shape and dtype."""
    shape = list(array.shape)
    if len(shape) > MAX_SIGNATURE_RANK:
        shape = shape[:MAX_SIGNATURE_RANK - 1] + [int(np.prod(shape[MAX_SIGNATURE_RANK - 1:]))]
    dims = shape + [-1] * (MAX_SIGNATURE_RANK - len(shape))
    return np.array([array.dtype.num, array.ndim, *dims], dtype=np.int64)


def _describe(signature) -> tuple[tuple[int, ...], str]:
    ndim = min(int(signature[1]), MAX_SIGNATURE_RANK)
    return tuple(int(d) for d in signature[2:2 + ndim]), str(DTYPES_BY_NUMBER.get(int(signature[0]), "?"))


class MPICommunicator:
    """The Communicator of this process's rank in an MPI communicator (COMM_WORLD by default)."""

    def __init__(self, comm=None, verify: bool = True):
        MPI = _mpi()
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        self.worker_id = self.comm.Get_rank()
        self.num_workers = self.comm.Get_size()
        self.verify = verify
        self._ops = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX, "avg": MPI.SUM}
        self._in_place = MPI.IN_PLACE

    def _check_same(self, collective: str, array) -> None:
        if not self.verify or self.num_workers == 1:
            return
        mine = signature_of(array)
        everyone = np.empty((self.num_workers, mine.size), dtype=np.int64)
        self.comm.Allgather(mine, everyone)
        if (everyone == mine).all():
            return
        raise ValueError(mismatch_message(collective, [_describe(row) for row in everyone]))

    def allreduce(self, send, recv, op: str) -> None:
        check_reduce_op(op)
        check_buffers("allreduce", send, recv, send.shape)
        self._check_same("allreduce", send)
        source = self._in_place if send is recv else np.ascontiguousarray(send)
        self.comm.Allreduce(source, recv, op=self._ops[op])
        if op == "avg":
            recv[...] = divide_in_dtype(recv, self.num_workers)

    def allgather(self, send, recv) -> None:
        check_buffers("allgather", send, recv, (send.shape[0] * self.num_workers, *send.shape[1:]))
        self._check_same("allgather", send)
        self.comm.Allgather(np.ascontiguousarray(send), recv)

    def broadcast_from_worker0(self, send, recv) -> None:
        self._check_same("broadcast_from_worker0", recv)
        if self.worker_id == 0 and send is not recv:
            recv[...] = send
        self.comm.Bcast(recv, root=0)

    def scatter_from_worker0(self, send, recv) -> None:
        self._check_same("scatter_from_worker0", recv)
        if self.worker_id == 0:
            expected = (recv.shape[0] * self.num_workers, *recv.shape[1:]) if recv.ndim else None
            if expected is None or tuple(send.shape) != expected or send.dtype != recv.dtype:
                raise ValueError(f"scatter_from_worker0: worker 0 sends {tuple(send.shape)} {send.dtype}, which does "
                                 f"not split into {self.num_workers} chunks of {tuple(recv.shape)} {recv.dtype}")
        # A rank that raised above leaves the others in Scatter: MPISession and ProcessSession end on it.
        self.comm.Scatter(np.ascontiguousarray(send) if self.worker_id == 0 else None, recv, root=0)

    def barrier(self) -> None:
        self.comm.Barrier()
