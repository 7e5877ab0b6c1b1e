"""The collective communication interface every Disco backend implements.

Buffers are the VM's tensors: numpy arrays on the CPU, cupy arrays on a GPU. Each call
is made by every worker of the group with buffers of the same shape and dtype; a
backend refuses a mismatch it can see rather than hang or compute garbage.
"""

from __future__ import annotations

from typing import Protocol

from ..diagnostics import UserError

from ..runtime.disco_builtins import REDUCE_KINDS  # noqa: F401 - TVM's ReduceKind codes, re-exported


class Communicator(Protocol):
    worker_id: int
    num_workers: int

    def allreduce(self, send, recv, op: str) -> None:
        """recv = op over the workers' `send`, elementwise, on every worker."""

    def allgather(self, send, recv) -> None:
        """recv = the workers' `send` concatenated along axis 0, in rank order, on every worker."""

    def broadcast_from_worker0(self, send, recv) -> None:
        """recv = worker 0's `send` on every worker."""

    def scatter_from_worker0(self, send, recv) -> None:
        """recv = chunk `worker_id` of worker 0's `send` split evenly along axis 0 (`send` may be None elsewhere)."""

    def barrier(self) -> None:
        """Returns once every worker has called it."""


class CollectiveAborted(UserError):
    """A collective this worker waited in was abandoned because another worker failed."""


def check_reduce_op(op: str) -> str:
    if op not in REDUCE_KINDS:
        raise UserError(f"unknown reduction '{op}' (expected one of: {', '.join(REDUCE_KINDS)})")
    return op


def divide_in_dtype(total, num_workers: int):
    """`total / num_workers` in `total`'s dtype, as TVM's avg is: integers divide truncating
    toward zero, as C does, rather than through float64."""
    if total.dtype.kind in "iu":
        quotient = abs(total) // num_workers
        return (quotient * ((total > 0) * 2 - 1) if total.dtype.kind == "i" else quotient).astype(total.dtype)
    return (total / total.dtype.type(num_workers)).astype(total.dtype, copy=False)


def mismatch_message(collective: str, signatures) -> str | None:
    """The error for workers that called `collective` with different (shape, dtype), or None.

    `signatures` holds each worker's (shape, dtype string), in rank order."""
    first = signatures[0]
    for rank, signature in enumerate(signatures):
        if tuple(signature) != tuple(first):
            return (f"{collective}: worker 0 has shape {tuple(first[0])} {first[1]} but worker {rank} has "
                    f"shape {tuple(signature[0])} {signature[1]}: every worker must pass the same shape and dtype")
    return None


def check_buffers(collective: str, send, recv, expected_recv_shape) -> None:
    """Refuses a `recv` buffer whose shape or dtype is not what the collective writes."""
    if tuple(recv.shape) != tuple(expected_recv_shape) or recv.dtype != send.dtype:
        raise UserError(f"{collective}: the output buffer is {tuple(recv.shape)} {recv.dtype}, expected "
                        f"{tuple(expected_recv_shape)} {send.dtype}")


def rank_communicator(session: str, backend: str, setup, executor):
    """(communicator, device) of a worker that is one MPI rank (ProcessSession, MPISession):
    MPI's COMM_WORLD for "mpi", or NCCL on GPU `rank` with the unique id in `setup`."""
    if backend == "mpi":
        from .ccl_mpi import MPICommunicator

        return MPICommunicator(), "cpu"
    if backend == "nccl":
        from .ccl_nccl import NCCLCommunicator, unique_id_from_array

        return NCCLCommunicator(executor.worker_id, executor.num_workers, unique_id_from_array(setup)), "cuda"
    raise ValueError(f"{session} has no communicator '{backend}' (expected: mpi, nccl)")
