"""numpy's BLAS held to one thread in a tool's process.

numpy's OpenBLAS starts a thread per core when numpy is imported, and each one
busy-waits for a while before it sleeps. No tool calls BLAS: kernels are relax's own,
run on its own thread pool. Those threads only take a core from the build or the run,
and starting them makes numpy's import slower. So a tool, run as a program, tells
OpenBLAS to use one thread, before anything imports numpy, unless the user set one of
the variables OpenBLAS reads for its thread count. A Python function or plugin that
relaxrun calls (docs/relaxrun.md) gets one BLAS thread by default for the same reason.
A library user's process is left as it is.
"""

from __future__ import annotations

import os
import sys

# What OpenBLAS reads for its thread count, first match wins.
THREAD_COUNT_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def hold_blas_to_one_thread(environ=None) -> bool:
    """Sets OPENBLAS_NUM_THREADS=1 in `environ` (default os.environ) if numpy is not
    imported yet and none of THREAD_COUNT_VARIABLES is set; says whether it did."""
    environ = os.environ if environ is None else environ
    if "numpy" in sys.modules or any(name in environ for name in THREAD_COUNT_VARIABLES):
        return False
    environ["OPENBLAS_NUM_THREADS"] = "1"
    return True
