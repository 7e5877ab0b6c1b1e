"""Disco: one compiled program on many workers (SPMD), as TVM's Disco runtime.

A Session owns the workers; every object on them is a DRef (a value per worker);
calling a DPackedFunc or a DModule function runs the same call on every worker, each on
its own shard; collectives exchange partial results between workers directly. It sits
beside the runtime: workers load artifacts with relax.vm and never import the compiler.

    session.py          DRef, DModule, DPackedFunc and the Session API every kind shares
    threaded.py         ThreadedSession(n): worker threads of this process
    process.py          ProcessSession(n): worker processes started by mpiexec
    worker.py           `python -m relax.disco.worker`: one ProcessSession worker
    mpi_session.py      MPISession() and mpi_main(): the ranks of a user's mpiexec job
    executor.py         a worker's object table and what each command does
    protocol.py         commands and answers as bytes between processes (JSON + .npy)
    worker_context.py   the current worker of a thread, read by the runtime.disco builtins
    ccl.py              the Communicator interface and its shared checks
    ccl_threads.py      collectives between threads (shared memory, a barrier)
    ccl_mpi.py          collectives between processes over MPI (mpi4py)
    ccl_nccl.py         collectives between GPUs over NCCL (cupy)
    profile.py          relaxrun --profile: each worker's time and its time in collectives

    with relax.disco.ProcessSession(2) as sess:
        mod = sess.load_vm_module("model.vmx")
        y = mod["main"](sess.scatter(x, axis=1), sess.broadcast(w))
        print(y.debug_get_from_remote(0))
"""

from .ccl import REDUCE_KINDS, Communicator
from .mpi_session import MPISession, mpi_main
from .process import ProcessSession
from .session import DModule, DPackedFunc, DRef, Session
from .threaded import ThreadedSession
from .worker_context import WorkerContext

__all__ = ["Communicator", "DModule", "DPackedFunc", "DRef", "MPISession", "ProcessSession", "REDUCE_KINDS",
           "Session", "ThreadedSession", "WorkerContext", "mpi_main"]
