"""Running deeply recursive Python on a thread of its own, where CPython 3.11 keeps its frames cheap.

CPython 3.11 keeps Python frames in 16 KiB chunks per thread; when a call returns
below the start of a chunk, the chunk is freed (munmap), and the next call that
crosses that line maps a new one (mmap, then page faults as it is written). The
thread's first chunk is never freed. The TIR visitors recurse once or more per
level of an expression, and relaxc runs them far down its own call stack (click,
the driver, the kernel build), where the recursion goes back and forth across a
chunk line: thousands of mmap/munmap pairs, each with its page faults, slow the
lowering markedly (docs/performance-notes.md). `call_on_fresh_stack` runs a
function on a new thread (in a copy of the caller's contextvars, so the PassContext
is the same) and waits for it: its frames start at the bottom of a chunk that is
never freed.

Threads started here and by object_parts.py get THREAD_STACK_BYTES of C stack
(`thread_stack_size`): what a Linux main thread has by default, where macOS gives
other threads 512 KiB, little for recursion through C (object printing, LLVM's
passes on a large function).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading

THREAD_STACK_BYTES = 16 << 20


# The stack size is one setting of the process: a lock keeps one thread's set-and-restore
# from interleaving with another's.
_STACK_SIZE_LOCK = threading.Lock()


@contextlib.contextmanager
def thread_stack_size(size: int = THREAD_STACK_BYTES):
    """Threads started in the block get `size` bytes of C stack (where settable)."""
    with _STACK_SIZE_LOCK:
        try:
            previous = threading.stack_size(size)
        except (ValueError, RuntimeError):  # a platform that cannot set it keeps its default
            yield
            return
        try:
            yield
        finally:
            threading.stack_size(previous)


def call_on_fresh_stack(function, *args, **kwargs):
    """function(*args, **kwargs) on a new thread; returns its result or raises its exception."""
    context = contextvars.copy_context()
    outcome: dict = {}

    def run():
        try:
            outcome["result"] = context.run(function, *args, **kwargs)
        except BaseException as error:  # handed to the caller, raised there
            outcome["error"] = error

    thread = threading.Thread(target=run, name="relax-fresh-stack", daemon=True)
    with thread_stack_size():
        thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
