"""MPISession: the ranks of a job the user started with `mpiexec -n N python ...` (any number of hosts).

Rank 0 is both the controller and worker 0: it runs each command on its own Executor in
the calling thread. The other ranks run `worker_loop`: commands reach them from rank 0
through MPI (`scatter` of the encoded bytes, protocol.py), and they answer only when rank 0
asks for a value (`send` of the encoded answer). Collectives use COMM_WORLD ("mpi").

A failure on any rank prints "worker K: message" to stderr and calls MPI Abort: the other
ranks may be blocked in a collective with it, and ending the job is the one way that
never hangs. The entry for scripts (and relaxrun --mpi) is `mpi_main(program)`: it runs
`program(session)` on rank 0 and the worker loop everywhere else.
"""

from __future__ import annotations

import atexit
import sys
import time

from .ccl import rank_communicator
from .executor import Command, Executor
from .protocol import decode_answer, decode_command, encode_answer, encode_command
from .session import Session

ANSWER_TAG = 7301


def _make_communicator(backend: str, setup, executor):
    return rank_communicator("MPISession", backend, setup, executor)


ABORT_DELAY_SECONDS = 0.5
ERROR_PREFIX = ""  # put before "worker K: message" (relaxrun --mpi sets "relaxrun: error: ")


def _abort(comm, rank: int, message: str) -> None:
    print(f"{ERROR_PREFIX}worker {rank}: {message}", file=sys.stderr, flush=True)
    time.sleep(ABORT_DELAY_SECONDS)  # mpiexec forwards the message before Abort kills the ranks' output
    comm.Abort(1)


def worker_loop(comm, executor: Executor) -> None:
    """A rank other than 0: runs rank 0's commands until shutdown; aborts the job on an error."""
    executor.bind()
    while True:
        command = decode_command(comm.scatter(None, root=0))
        answer = executor.handle(command)
        if answer[0] == "error":
            _abort(comm, executor.worker_id, answer[1])
        if command.reply_from == executor.worker_id:
            comm.send(encode_answer(answer), dest=0, tag=ANSWER_TAG)
        if command.kind == "shutdown":
            return


class MPISession(Session):
    """The session of an mpiexec job, on rank 0. Constructed on another rank, it serves as a worker
    until rank 0 shuts the session down, then ends the process (as `mpi_main` does)."""

    default_ccl = "mpi"

    def __init__(self, ccl: str | None = None, comm=None):
        from mpi4py import MPI

        self.comm = comm if comm is not None else MPI.COMM_WORLD
        super().__init__(self.comm.Get_size())
        self.rank = self.comm.Get_rank()
        self._executor = Executor(self.rank, self.num_workers, ccl_factory=_make_communicator)
        if self.rank != 0:
            worker_loop(self.comm, self._executor)
            sys.exit(0)
        self._executor.bind()
        atexit.register(self.shutdown)  # the other ranks wait for commands until they hear it
        self.init_ccl(ccl)

    def _execute(self, command: Command):
        self.comm.scatter([encode_command(command, rank) for rank in range(self.num_workers)], root=0)
        answer = self._executor.handle(command)
        if answer[0] == "error":
            _abort(self.comm, 0, answer[1])
        if command.reply_from not in (None, 0):
            answer = decode_answer(self.comm.recv(source=command.reply_from, tag=ANSWER_TAG))
        return answer[1]

    def _close(self) -> None:
        atexit.unregister(self.shutdown)
        self._execute(Command("shutdown"))


def mpi_main(program, ccl: str | None = None) -> int:
    """Runs `program(session)` on rank 0 of this mpiexec job, the worker loop on the other ranks;
    returns program's result on rank 0 (None elsewhere). Call it on every rank."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.Get_rank() != 0:
        worker_loop(comm, Executor(comm.Get_rank(), comm.Get_size(), ccl_factory=_make_communicator))
        return None
    with MPISession(ccl, comm) as session:
        return program(session)
