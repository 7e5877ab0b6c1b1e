"""Python's cycle collector held off while a tool compiles.

A compile allocates millions of short-lived objects (IR nodes, LLVM IR text pieces)
that nearly all die by reference counting; the cycle collector, run every 700
allocations, still walks the young ones each time, for a few percent of a compile.
Few cycles are left behind without it (the peak resident size barely grows: the
figures are in docs/performance-notes.md). Collection resumes when the block ends, so
a library user's process is left as it was; a tool that ends by os._exit right after
(process_exit.py) leaves it off, as the first allocation after re-enabling would run
a full collection of everything the compile left alive, for nothing.

Such a tool (`relaxc`) turns it off for its whole process, from the start of its
command (`paused_until_exit`): importing the toolchain (some 550 modules, their
classes and functions) ran dozens of collections before the compile began.
"""

from __future__ import annotations

import contextlib
import gc

from .process_exit import is_ending_fast


def paused_until_exit() -> None:
    """Turns automatic cycle collection off for the rest of a process that ends by
    process_exit.exit_process (runner.run_command's fast_exit)."""
    gc.disable()


@contextlib.contextmanager
def cycle_collection_paused():
    """Runs the block with automatic cycle collection off (unless it was off already)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        # A process about to end by os._exit keeps it off: turned back on, it would run one
        # full collection over the whole compile's objects right before the exit.
        if not is_ending_fast():
            gc.enable()
