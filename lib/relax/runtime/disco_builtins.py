"""The runtime.disco.* builtins: the collectives and worker queries a program calls.

    runtime.disco.allreduce(send, reduce_kind, in_group, recv)     reduce_kind: ShapeTuple([code])
    runtime.disco.allgather(send, in_group, recv)                  concatenate along axis 0
    runtime.disco.broadcast_from_worker0(send, in_group, recv)     worker 0's value everywhere
    runtime.disco.scatter_from_worker0(send, in_group, recv)       chunk `worker_id` of worker 0's
    runtime.disco.worker_id() -> ShapeTuple([id])                  (as TVM: a shape a program
    runtime.disco.worker_rank() -> int                              match_casts into a size var)
    runtime.disco.num_workers() -> int

Legalization of R.ccl.* calls them in destination-passing style, the output last
(op/ccl.py), under TVM's names. Each reads the worker it runs as from
relax.disco.worker_context: with none bound, the program runs alone and a collective
is a copy (a scatter or gather of one). With one bound, the work goes to the
context's communicator. TVM's worker groups are one group here, so `in_group` (which
picks the workers of the caller's group) names every worker either way.

The buffers are the VM's tensors, numpy or cupy arrays: the builtins only compare
shapes, copy with `recv[...] = send` and reshape, which both libraries share.
"""

from __future__ import annotations

from .errors import VMError
from .objects import ShapeTuple
from .registry import register_func

REDUCE_KINDS = ("sum", "prod", "min", "max", "avg")  # TVM's ReduceKind codes 0..4, in order


def _worker():
    """The current WorkerContext, or None when the program runs alone."""
    # Imported here, not at the top: relax.disco (sessions, transports) sits above the
    # runtime and is loaded only by a program that reaches a collective.
    from ..disco import worker_context

    return worker_context.current()


def _communicator(context, builtin: str):
    if context.ccl is None:
        raise VMError(f"{builtin}: worker {context.worker_id} has no communicator: call init_ccl first")
    return context.ccl


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _expect(builtin: str, what: str, expected, actual, workers: int) -> None:
    """Refuses a tensor whose shape does not fit the number of workers."""
    if tuple(expected) != tuple(actual):
        raise VMError(f"{builtin}: with {workers} worker{'s' if workers != 1 else ''} the {what} must have shape "
                      f"{_shape_text(expected)}, got {_shape_text(actual)}")


def _workers(context) -> int:
    return 1 if context is None else context.num_workers


def _reduce_kind(code) -> str:
    value = code[0] if isinstance(code, (tuple, list)) and len(code) == 1 else code
    if not isinstance(value, int) or not 0 <= value < len(REDUCE_KINDS):
        raise VMError(f"runtime.disco.allreduce: unknown reduce kind {code!r} "
                      f"(codes 0..{len(REDUCE_KINDS) - 1}: {', '.join(REDUCE_KINDS)})")
    return REDUCE_KINDS[value]


def allreduce(send, reduce_kind, in_group, recv) -> None:
    """recv = the reduction of every worker's `send`, elementwise (alone: a copy)."""
    builtin, context = "runtime.disco.allreduce", _worker()
    op = _reduce_kind(reduce_kind)
    _expect(builtin, "result", send.shape, recv.shape, _workers(context))
    if context is None:
        recv[...] = send
    else:
        _communicator(context, builtin).allreduce(send, recv, op)


def allgather(send, in_group, recv) -> None:
    """recv = every worker's `send` concatenated along axis 0 in worker order."""
    builtin, context = "runtime.disco.allgather", _worker()
    workers = _workers(context)
    if len(send.shape) == 0:
        raise VMError(f"{builtin}: cannot gather along axis 0 of a tensor of rank 0")
    _expect(builtin, "result", (send.shape[0] * workers, *send.shape[1:]), recv.shape, workers)
    if context is None:
        recv[...] = send
    else:
        _communicator(context, builtin).allgather(send, recv)


def broadcast_from_worker0(send, in_group, recv) -> None:
    """recv = worker 0's `send` on every worker."""
    builtin, context = "runtime.disco.broadcast_from_worker0", _worker()
    _expect(builtin, "result", send.shape, recv.shape, _workers(context))
    if context is None:
        recv[...] = send
    else:
        _communicator(context, builtin).broadcast_from_worker0(send, recv)


def scatter_from_worker0(send, in_group, recv) -> None:
    """recv = chunk `worker_id` of worker 0's `send`, split evenly along axis 0.

    As TVM's legalization lays it out, `send` is (workers, *recv.shape): the scattered
    axis was moved to the front and split (op/ccl.py). A `send` of (workers * d0, ...)
    holds the same chunks; the communicator gets them as (workers * d0, ...), split along axis 0."""
    builtin, context = "runtime.disco.scatter_from_worker0", _worker()
    workers = _workers(context)
    stacked = (workers, *recv.shape)
    if send.size != recv.size * workers:
        _expect(builtin, "tensor to scatter", stacked, send.shape, workers)
    chunks = send.reshape(stacked)
    if context is None:
        recv[...] = chunks[0]
    else:
        # The Communicator contract splits along axis 0 into chunks of recv's shape: (workers * d0, ...).
        flat = chunks.reshape((workers * recv.shape[0], *recv.shape[1:])) if len(recv.shape) else chunks
        _communicator(context, builtin).scatter_from_worker0(flat, recv)


def worker_id() -> ShapeTuple:
    """(worker_id,): a shape, as TVM gives it, that a program match_casts into a size."""
    context = _worker()
    return ShapeTuple([0 if context is None else context.worker_id])


def worker_rank() -> int:
    context = _worker()
    return 0 if context is None else context.worker_id


def num_workers() -> int:
    return _workers(_worker())


DISCO_BUILTINS = {
    "runtime.disco.allreduce": allreduce,
    "runtime.disco.allgather": allgather,
    "runtime.disco.broadcast_from_worker0": broadcast_from_worker0,
    "runtime.disco.scatter_from_worker0": scatter_from_worker0,
    "runtime.disco.worker_id": worker_id,
    "runtime.disco.worker_rank": worker_rank,
    "runtime.disco.num_workers": num_workers,
}

for _name, _func in DISCO_BUILTINS.items():
    register_func(_name, _func, override=True)
