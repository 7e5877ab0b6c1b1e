"""Collectives between GPUs over NCCL, through cupy's `cupy.cuda.nccl` (one GPU per worker).

Worker 0 makes the NCCL unique id (`make_unique_id`); the session carries it to every
worker as a small integer array (`unique_id_to_array` / `unique_id_from_array`, so it
travels over any session's channel), and each worker builds its NcclCommunicator for
`cuda:worker_id`. NCCL has no scatter: worker 0 sends each chunk with point-to-point
calls inside one NCCL group. The buffers are cupy arrays; calls run on the current stream.

Importing this module needs neither cupy nor a GPU: cupy is imported when a communicator
or a unique id is made, and a missing or NCCL-less cupy is a clear error then.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..diagnostics import UserError
from .ccl import check_buffers, check_reduce_op, divide_in_dtype

# numpy dtype name -> the cupy.cuda.nccl constant of that datatype
NCCL_DTYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32", "uint32": "NCCL_UINT32",
               "int64": "NCCL_INT64", "uint64": "NCCL_UINT64", "float16": "NCCL_FLOAT16",
               "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64"}
NCCL_OPS = {"sum": "NCCL_SUM", "prod": "NCCL_PROD", "min": "NCCL_MIN", "max": "NCCL_MAX", "avg": "NCCL_SUM"}
UNIQUE_ID_BYTES, UNIQUE_ID_TUPLE = 1, 0  # how this cupy spells a unique id: bytes (cupy >= 13) or a tuple of ints


def nccl_module():
    """cupy.cuda.nccl, or a UserError saying what is missing."""
    try:
        with warnings.catch_warnings():  # cupy warns when libnccl is missing: the check below says it
            warnings.simplefilter("ignore")
            from cupy.cuda import nccl
    except ImportError:
        raise UserError("the 'nccl' communicator needs cupy with NCCL (pip install .[cuda], which brings cupy-cuda13x)") from None
    if not getattr(nccl, "available", True) or not hasattr(nccl, "NcclCommunicator"):
        raise UserError("the 'nccl' communicator needs NCCL, but this cupy was loaded without it "
                        "(install the NCCL library for your CUDA)")
    return nccl


def make_unique_id():
    return nccl_module().get_unique_id()


def unique_id_to_array(unique_id) -> np.ndarray:
    """The unique id as int64 values (its spelling first), for a session channel that carries arrays."""
    kind = UNIQUE_ID_BYTES if isinstance(unique_id, (bytes, bytearray)) else UNIQUE_ID_TUPLE
    return np.array([kind, *unique_id], dtype=np.int64)


def unique_id_from_array(values) -> bytes | tuple:
    values = [int(v) for v in np.asarray(values).reshape(-1)]
    if not values or values[0] not in (UNIQUE_ID_BYTES, UNIQUE_ID_TUPLE):
        raise UserError("malformed NCCL unique id")
    return bytes(v & 0xFF for v in values[1:]) if values[0] == UNIQUE_ID_BYTES else tuple(values[1:])


def nccl_datatype(nccl, dtype) -> int:
    name = NCCL_DTYPES.get(str(dtype))
    if name is None or not hasattr(nccl, name):
        raise UserError(f"NCCL has no datatype for {dtype} (supported: {', '.join(NCCL_DTYPES)})")
    return getattr(nccl, name)


class NCCLCommunicator:
    """The Communicator of worker `worker_id` of `num_workers`, on GPU `device_id` (default: its rank)."""

    def __init__(self, worker_id: int, num_workers: int, unique_id, device_id: int | None = None):
        import cupy

        self.nccl = nccl_module()
        self.cupy = cupy
        self.worker_id = worker_id
        self.num_workers = num_workers
        self.device_id = worker_id if device_id is None else device_id
        cupy.cuda.Device(self.device_id).use()  # this worker's thread allocates and launches on its GPU from now on
        self.comm = self.nccl.NcclCommunicator(num_workers, unique_id, worker_id)

    def _stream(self) -> int:
        return self.cupy.cuda.get_current_stream().ptr

    def allreduce(self, send, recv, op: str) -> None:
        check_reduce_op(op)
        check_buffers("allreduce", send, recv, send.shape)
        nccl = self.nccl
        self.comm.allReduce(send.data.ptr, recv.data.ptr, send.size, nccl_datatype(nccl, send.dtype),
                            getattr(nccl, NCCL_OPS[op]), self._stream())
        if op == "avg":
            recv[...] = divide_in_dtype(recv, self.num_workers)

    def allgather(self, send, recv) -> None:
        check_buffers("allgather", send, recv, (send.shape[0] * self.num_workers, *send.shape[1:]))
        self.comm.allGather(send.data.ptr, recv.data.ptr, send.size, nccl_datatype(self.nccl, send.dtype),
                            self._stream())

    def broadcast_from_worker0(self, send, recv) -> None:
        source = send.data.ptr if self.worker_id == 0 else recv.data.ptr
        self.comm.broadcast(source, recv.data.ptr, recv.size, nccl_datatype(self.nccl, recv.dtype), 0,
                            self._stream())

    def scatter_from_worker0(self, send, recv) -> None:
        nccl, stream, datatype = self.nccl, self._stream(), nccl_datatype(self.nccl, recv.dtype)
        nccl.groupStart()
        try:
            if self.worker_id == 0:
                if send.size != recv.size * self.num_workers:
                    raise UserError(f"scatter_from_worker0: {tuple(send.shape)} does not split into "
                                    f"{self.num_workers} chunks of {tuple(recv.shape)}")
                chunks = self.cupy.ascontiguousarray(send).reshape(self.num_workers, -1)
                for peer in range(self.num_workers):
                    self.comm.send(chunks[peer].data.ptr, recv.size, datatype, peer, stream)
            self.comm.recv(recv.data.ptr, recv.size, datatype, 0, stream)
        finally:
            nccl.groupEnd()

    def barrier(self) -> None:
        # An allreduce of one element: NCCL has no barrier, and this orders every earlier call too.
        token = self.cupy.zeros(1, dtype=self.cupy.float32)
        self.allreduce(token, token, "sum")
        self.cupy.cuda.get_current_stream().synchronize()
