"""What the cross-check scripts share: running commands, and the 'cannot be had here' signal."""

from __future__ import annotations

import os
import subprocess
import sys

PREFIX = "cross-check:"
VERBOSE = bool(os.environ.get("CROSS_CHECK_VERBOSE"))


class Unavailable(Exception):
    """Something the check needs (qemu, Debian packages, wheels) cannot be had on this machine.

    The check is then skipped, not failed: only these, never a wrong result, lead to a skip.
    """


class CommandFailed(Exception):
    def __init__(self, command: list[str], returncode: int, output: str):
        self.command, self.returncode, self.output = command, returncode, output
        super().__init__(f"{' '.join(command)} exited {returncode}\n{tail(output)}")


def log(message: str) -> None:
    print(f"{PREFIX} {message}", flush=True)


def tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run(command: list[str], *, env: dict | None = None, cwd: str | None = None,
        timeout: float | None = None) -> str:
    """Runs `command` with its output captured (stdout and stderr together); returns the output.

    Raises CommandFailed, with the output, when it exits non-zero.
    """
    if VERBOSE:
        print(f"+ {' '.join(command)}", file=sys.stderr, flush=True)
    result = subprocess.run(command, env=env, cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise CommandFailed(command, result.returncode, result.stdout)
    return result.stdout


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
