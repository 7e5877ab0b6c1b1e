"""ThreadedSession: the workers are threads of this process.

Each worker thread takes Commands from its own queue, runs them on its Executor (its
WorkerContext bound to that thread) and puts its answer on the session's answer queue.
Commands and values pass by reference: nothing is encoded.

Its CPU communicator is "threads" (ccl_threads.py): the workers share one address space,
so a collective only needs a barrier and reads of the peers' buffers; going through MPI
or sockets would copy what every thread can already see. "nccl" serves GPU workers.
The kernels release the GIL, so the workers' VMs compute in parallel.
"""

from __future__ import annotations

import queue
import threading
import time

from ..diagnostics import UserError
from .ccl_threads import ThreadGroup
from .executor import Command, Executor
from .session import Session, first_error

POLL_SECONDS = 0.5
STOP = None  # put on a worker's queue to end its thread


class ThreadedSession(Session):
    """`num_workers` worker threads in this process; collectives over "threads" (default) or "nccl"."""

    default_ccl = "threads"

    def __init__(self, num_workers: int, ccl: str | None = None, error_grace: float = 1.0):
        super().__init__(num_workers)
        self.error_grace = error_grace
        self._group = ThreadGroup(num_workers)
        self._answers: queue.Queue = queue.Queue()
        self._queues = [queue.Queue() for _ in range(num_workers)]
        self._threads = []
        for worker_id in range(num_workers):
            executor = Executor(worker_id, num_workers, ccl_factory=self._make_communicator)
            thread = threading.Thread(target=self._worker_loop, args=(executor, self._queues[worker_id]),
                                      name=f"disco-worker-{worker_id}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self.init_ccl(ccl)

    def _make_communicator(self, backend: str, setup, executor: Executor):
        if backend == "threads":
            return self._group.communicator(executor.worker_id), "cpu"
        if backend == "nccl":
            from .ccl_nccl import NCCLCommunicator, unique_id_from_array

            return NCCLCommunicator(executor.worker_id, self.num_workers, unique_id_from_array(setup)), "cuda"
        raise UserError(f"ThreadedSession has no communicator '{backend}' (expected: threads, nccl)")

    def _worker_loop(self, executor: Executor, commands: queue.Queue) -> None:
        executor.bind()
        while True:
            command = commands.get()
            if command is STOP:
                executor.handle(Command("shutdown"))
                return
            self._answers.put((executor.worker_id, executor.handle(command)))

    def _execute(self, command: Command):
        for commands in self._queues:
            commands.put(command)
        answers: dict[int, tuple] = {}
        abort_at = None
        while len(answers) < self.num_workers:
            if abort_at is not None and time.monotonic() >= abort_at:
                # Peers still waiting for a failed worker in a collective would wait forever.
                self._group.abort()
                abort_at = float("inf")
            try:
                rank, answer = self._answers.get(timeout=POLL_SECONDS if abort_at is None else self.error_grace / 4)
            except queue.Empty:
                self._check_alive()
                continue
            answers[rank] = answer
            if answer[0] == "error" and abort_at is None:
                abort_at = time.monotonic() + self.error_grace
        message = first_error(answers)
        if message is not None:
            self._group.reset()
            raise UserError(message)
        return answers[command.reply_from][1] if command.reply_from is not None else None

    def _check_alive(self) -> None:
        dead = [rank for rank, thread in enumerate(self._threads) if not thread.is_alive()]
        if dead:
            self._closed = True
            raise UserError(f"worker {dead[0]}: its thread ended unexpectedly; the session is shut down")

    def _close(self) -> None:
        self._group.abort()  # a worker stuck in a collective leaves it
        for commands in self._queues:
            commands.put(STOP)
        for thread in self._threads:
            thread.join(timeout=10)
