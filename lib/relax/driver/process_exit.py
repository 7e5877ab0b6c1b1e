"""Ending a tool's process without the interpreter's teardown.

When `relaxc` has written its output, what is left of the process is Python's
finalization: every module's objects freed one by one (the IR of the model, its
weights, the LLVM modules and JIT engines of constant folding) and a last cycle
collection, a few percent of a short compile (docs/performance-notes.md). A tool
run as a program flushes its streams and
leaves with os._exit instead; its files are written and closed by then, and the
atexit handler of codegen/worker_pool.py (it waits for LLVM workers still compiling)
has nothing left to wait for: a build has waited for its parts or cancelled them.
Called in-process (tests, `main(argv)`),
or under a profiler or tracer (cProfile, coverage: they report at exit), a tool
returns its exit code as before.
"""

from __future__ import annotations

import os
import sys


def exit_process(code: int):
    """Flushes stdout and stderr and ends the process with `code` at once."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


# Set by ending_fast: this process ends by exit_process once its command is done.
_ENDING_FAST = False


def ending_fast() -> None:
    """Marks this process as one that ends by exit_process once its command is done."""
    global _ENDING_FAST
    _ENDING_FAST = True


def is_ending_fast() -> bool:
    """Whether this process ends by exit_process once its command is done (ending_fast)."""
    return _ENDING_FAST
