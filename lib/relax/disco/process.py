"""ProcessSession: the workers are processes on this host, started by mpiexec; MPI carries the collectives.

The controller listens on 127.0.0.1 (any free port) and starts
`mpiexec -n N python -m relax.disco.worker --controller 127.0.0.1:PORT --authkey-env NAME`
in a process group of its own. Each rank connects back (multiprocessing.connection,
authenticated with a random key passed in the environment) and says its rank. A command
goes to every rank as bytes (protocol.py: JSON and .npy, never pickle); the controller
reads one answer per rank.

Nothing waits forever: the start has a deadline; while waiting for answers the
controller polls its connections and mpiexec, so a rank that dies (its connection closes,
or mpiexec exits) ends the session within a poll or two; after a worker's error the
others get a grace period to answer (they may be blocked in a collective with the failed
one) before the session is ended. Ending kills mpiexec's whole process group.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from multiprocessing.connection import Listener, wait

from ..diagnostics import UserError
from .executor import Command
from .protocol import decode_answer, encode_command
from .session import Session, first_error

KEY_VARIABLE = "RELAX_DISCO_AUTHKEY"
POLL_SECONDS = 0.2


def find_mpiexec() -> str:
    """mpiexec next to this Python (a venv with the mpich wheel), else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("mpiexec")
    if found is None:
        raise UserError("ProcessSession needs mpiexec, found neither next to Python nor on PATH "
                        "(pip install mpi4py mpich)")
    return found


def worker_environment(key: bytes, package_root: str) -> dict:
    """The environment mpiexec and its ranks get: this one, the session's key, this package
    on the path, and, as root, Open MPI's consent to run as root. Open MPI refuses root
    unless told; the ranks are this process's own workers on this host under the same user,
    so the consent adds no privilege (MPICH ignores the variables)."""
    env = dict(os.environ, **{KEY_VARIABLE: key.hex()})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def _kill_group(process: subprocess.Popen) -> None:
    """Ends mpiexec and every rank it started (they share its process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            break
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # ranks that outlived mpiexec


class ProcessSession(Session):
    """`num_workers` processes under mpiexec; collectives over "mpi" (default) or "nccl"."""

    default_ccl = "mpi"

    def __init__(self, num_workers: int, ccl: str | None = None, start_timeout: float = 60.0,
                 error_grace: float = 3.0, plugins=(), mpiexec: str | None = None):
        super().__init__(num_workers)
        self.error_grace = error_grace
        self._connections: list = []
        key = os.urandom(32)
        self._listener = Listener(("127.0.0.1", 0), authkey=key)
        self._process = self._start(mpiexec or find_mpiexec(), key, plugins)
        self._finalizer = weakref.finalize(self, _kill_group, self._process)
        try:
            self._connections = self._accept(start_timeout)
        except BaseException:
            self._end()
            raise
        self.init_ccl(ccl)

    def _start(self, mpiexec: str, key: bytes, plugins) -> subprocess.Popen:
        import relax

        host, port = self._listener.address
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(relax.__file__)))
        env = worker_environment(key, package_root)
        command = [mpiexec, "-n", str(self.num_workers), sys.executable, "-m", "relax.disco.worker",
                   "--controller", f"{host}:{port}", "--authkey-env", KEY_VARIABLE,
                   "--controller-pid", str(os.getpid())]
        for plugin in plugins:
            command += ["--plugin", os.path.abspath(plugin)]
        return subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, start_new_session=True)

    def _accept(self, timeout: float) -> list:
        """One connection per rank, in rank order; a UserError if they do not all come in time."""
        connections: dict[int, object] = {}
        failure: list[BaseException] = []

        def accept_all():
            while len(connections) < self.num_workers:
                try:
                    connection = self._listener.accept()
                    rank, size = (int(v) for v in connection.recv_bytes(64).split())
                except Exception as error:  # noqa: BLE001 - a closed listener or a bad peer
                    failure.append(error)
                    return
                if size != self.num_workers or not 0 <= rank < size or rank in connections:
                    failure.append(UserError(f"a worker said it is rank {rank} of {size}"))
                    return
                connections[rank] = connection

        thread = threading.Thread(target=accept_all, name="disco-accept", daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline and self._process.poll() is None:
            thread.join(POLL_SECONDS)
        if len(connections) == self.num_workers:
            return [connections[rank] for rank in range(self.num_workers)]
        if self._process.poll() is not None:
            reason = f"mpiexec exited with status {self._process.returncode}"
        elif failure:
            reason = str(failure[0])
        else:
            reason = f"not all of them connected within {timeout:g} s"
        raise UserError(f"ProcessSession could not start its {self.num_workers} workers: {reason}")

    # ---- running commands -----------------------------------------------------------------------

    def _execute(self, command: Command):
        for rank, connection in enumerate(self._connections):
            try:
                connection.send_bytes(encode_command(command, rank))
            except OSError:
                self._die(f"worker {rank}: its connection is closed (the process ended)")
        answers = self._collect(command.kind)
        message = first_error(answers)
        if message is not None:
            if len(answers) < self.num_workers:
                missing = ", ".join(str(r) for r in range(self.num_workers) if r not in answers)
                self._die(f"{message} (workers {missing} did not answer after it; the session is shut down)")
            raise UserError(message)
        return answers[command.reply_from][1] if command.reply_from is not None else None

    def _collect(self, kind: str) -> dict:
        """Every rank's answer; fewer when a worker failed and the others did not answer in the grace period."""
        answers: dict[int, tuple] = {}
        pending = {connection: rank for rank, connection in enumerate(self._connections)}
        grace_end = None
        while pending:
            timeout = POLL_SECONDS if grace_end is None else max(0.0, min(POLL_SECONDS, grace_end - time.monotonic()))
            for connection in wait(list(pending), timeout):
                rank = pending.pop(connection)
                try:
                    answers[rank] = decode_answer(connection.recv_bytes())
                except (EOFError, OSError):
                    self._die_of_closed(kind, rank, pending)
                except Exception as error:  # noqa: BLE001 - a malformed answer ends the session
                    self._die(f"worker {rank} sent a malformed answer: {error}")
                if answers[rank][0] == "error" and grace_end is None:
                    grace_end = time.monotonic() + self.error_grace
            if self._process.poll() is not None and pending:
                self._die_of_exit(kind, pending)
            if grace_end is not None and time.monotonic() >= grace_end:
                break
        return answers

    def _die_of_closed(self, kind: str, rank: int, pending: dict) -> None:
        """`rank`'s connection closed: it died. mpiexec then ends the other ranks, so those whose
        connections close within a poll are named with it (which one died first is not known)."""
        dead = [rank]
        for connection in wait(list(pending), POLL_SECONDS):
            try:
                connection.recv_bytes()  # an answer sent before mpiexec ended it: it did not die of itself
            except (EOFError, OSError):
                dead.append(pending[connection])
        names = ", ".join(str(r) for r in sorted(dead))
        self._die(f"worker{'s' if len(dead) > 1 else ''} {names} died during '{kind}' (the connection closed); "
                  "the session is shut down")

    def _die_of_exit(self, kind: str, pending: dict) -> None:
        # An answer may still be in flight from a rank that finished before mpiexec ended.
        for connection in wait(list(pending), POLL_SECONDS):
            with contextlib.suppress(EOFError, OSError):
                connection.recv_bytes()
        ranks = ", ".join(str(rank) for rank in sorted(pending.values()))
        self._die(f"worker {ranks} died during '{kind}' (mpiexec exited with status {self._process.returncode}); "
                  "the session is shut down")

    def _die(self, message: str):
        self._closed = True
        self._end()
        raise UserError(message)

    # ---- ending ---------------------------------------------------------------------------------

    def _close(self) -> None:
        for connection in self._connections:
            with contextlib.suppress(OSError):
                connection.send_bytes(encode_command(Command("shutdown"), 0))
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=10)
        self._end()

    def _end(self) -> None:
        """Kills what is left of the workers and closes every channel."""
        self._finalizer()
        for connection in self._connections:
            connection.close()
        self._listener.close()
