"""Python's cycle collector held off while a tool compiles.

A compile allocates millions of short-lived objects (IR nodes, LLVM IR text pieces)
that nearly all die by reference counting; the cycle collector, run every 700
allocations, still walks the young ones each time, for a few percent of a compile.
Few cycles are left behind without it (the peak resident size barely grows: the
figures are in docs/performance-notes.md). Collection resumes when the block ends; a
library user's process is left as it was.
"""

from __future__ import annotations

import contextlib
import gc


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
        gc.enable()
