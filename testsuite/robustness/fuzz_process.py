"""Running one tool on one fuzz case, in a process of its own, and judging how it ended.

Two runners, both a fresh process per step, so that a crash or a hang is seen and
the fuzzer survives it:

- `fork` (the default): the fuzzer imports the four tools once, before it runs any
  of them, and forks for every step; the child calls the tool's `main(argv)` and
  leaves with its exit code. About ten times faster than starting Python, since the
  imports are done once. The parent runs no tool code itself and starts no thread,
  so each child starts as clean as a new process.
- `exec`: the installed console scripts (`relaxc ...`), exactly as a user runs them.
  Every finding is rerun this way before it is saved, so a reproducer never depends
  on the fork runner.

A step FAILS on exit 70 (an internal error), a Python traceback on stderr, death by
a signal, a hang (past the timeout), or an exit status the tools never use (CLI.md:
0, 1, 2, 3, 70). Each child runs under an address-space limit so that a mutated size
makes a MemoryError, not a machine out of memory.
"""

from __future__ import annotations

import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass

TOOLS = ("relaxc", "relaxas", "relaxld", "relaxrun")
CLEAN_EXITS = {0: "ok", 1: "error", 2: "usage", 3: "mismatch"}
FAILING = ("internal", "traceback", "signal", "timeout", "odd-exit")
OUTCOMES = ("ok", "error", "usage", "mismatch") + FAILING
TRACEBACK_MARK = "Traceback (most recent call last)"
STDERR_KEPT = 64 * 1024  # of each step's stderr, for messages and findings


@dataclass(frozen=True)
class Step:
    """One tool run: `tool args...` in the case's directory."""

    tool: str
    args: tuple[str, ...]

    def shell(self) -> str:
        import shlex

        return " ".join(shlex.quote(part) for part in (self.tool, *self.args))


@dataclass(frozen=True)
class Outcome:
    kind: str          # one of OUTCOMES
    code: int | None   # the exit status, or minus the signal number
    stderr: str
    seconds: float

    @property
    def failed(self) -> bool:
        return self.kind in FAILING

    def describe(self) -> str:
        if self.kind == "signal":
            return f"killed by {signal.Signals(-self.code).name}"
        if self.kind == "timeout":
            return f"no end after {self.seconds:.0f} s (killed)"
        return f"exit {self.code}"


def judge(code: int | None, stderr: str, seconds: float, timed_out: bool) -> Outcome:
    if timed_out:
        kind = "timeout"
    elif code is not None and code < 0:
        kind = "signal"
    elif TRACEBACK_MARK in stderr:
        kind = "traceback"
    elif code == 70:
        kind = "internal"
    else:
        kind = CLEAN_EXITS.get(code, "odd-exit")
    return Outcome(kind, code, stderr, seconds)


def import_tools() -> dict:
    """Each tool's main(argv), and the modules its commands import lazily, loaded now:
    before the first fork, so that no child pays for them."""
    import importlib

    mains = {tool: importlib.import_module(f"{tool}.cli").main for tool in TOOLS}
    for name in ("relax.driver.compile", "relax.driver.artifact", "relax.driver.bytecode",
                 "relax.driver.assemble", "relax.driver.link", "relax.driver.run"):
        importlib.import_module(name)
    return mains


def limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _read_tail(path: str) -> str:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - STDERR_KEPT))
        return handle.read().decode("utf-8", "replace")


class Runner:
    """Runs steps in `directory` (stdout to STEP.out, stderr to STEP.err) with a timeout."""

    def __init__(self, kind: str = "fork", timeout: float = 30.0, memory_mb: int = 4096, env: dict | None = None):
        self.kind = kind
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.env = dict(os.environ if env is None else env)
        self.mains = import_tools() if kind == "fork" else None

    def run(self, step: Step, directory: str, name: str = "step") -> Outcome:
        out, err = os.path.join(directory, f"{name}.out"), os.path.join(directory, f"{name}.err")
        started = time.monotonic()
        if self.kind == "fork":
            code, timed_out = self._fork(step, directory, out, err)
        else:
            code, timed_out = self._exec(step, directory, out, err)
        return judge(code, _read_tail(err), time.monotonic() - started, timed_out)

    def _exec(self, step: Step, directory: str, out: str, err: str) -> tuple[int | None, bool]:
        program = shutil.which(step.tool, path=os.path.dirname(sys.executable)) or step.tool
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            process = subprocess.Popen([program, *step.args], cwd=directory, stdin=subprocess.DEVNULL, stdout=stdout,
                                       stderr=stderr, env=self.env, start_new_session=True,
                                       preexec_fn=lambda: limit_memory(self.memory_mb))
            try:
                return process.wait(self.timeout), False
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return None, True

    def _fork(self, step: Step, directory: str, out: str, err: str) -> tuple[int | None, bool]:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            self._child(step, directory, out, err)
        return self._wait(pid)

    def _child(self, step: Step, directory: str, out: str, err: str) -> None:
        code = 1
        try:
            os.setsid()
            for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                    (2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
                opened = os.open(path, flags, 0o644)
                os.dup2(opened, fd)
                os.close(opened)
            os.chdir(directory)
            os.environ.clear()
            os.environ.update(self.env)
            limit_memory(self.memory_mb)
            sys.argv = [step.tool, *step.args]
            code = self.mains[step.tool](list(step.args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:  # noqa: BLE001 - what escapes a tool prints as Python would print it
            traceback.print_exc()
            code = 1
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:  # noqa: BLE001
                    pass
            os._exit(code & 0xFF if isinstance(code, int) else 1)

    def _wait(self, pid: int) -> tuple[int | None, bool]:
        descriptor = os.pidfd_open(pid)
        try:
            ready, _, _ = select.select([descriptor], [], [], self.timeout)
            timed_out = not ready
            if timed_out:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:  # not yet a group leader
                    os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(descriptor)
        return (None if timed_out else os.waitstatus_to_exitcode(status)), timed_out
