"""Running deeply recursive Python on a thread of its own, with room for its frames.

The kernel lowering recurses deeply (the TIR visitors recurse once or more per level
of an expression). `call_on_fresh_stack` runs a function on a new thread (in a copy
of the caller's contextvars, so the PassContext is the same) and waits for it. On
that thread the function's frames start with room for the recursion
(frame_room.py): CPython 3.11 would otherwise map and unmap a 16 KiB chunk of frames
each time the recursion crossed a chunk's end, thousands of times a build.

Threads started here and by object_parts.py get THREAD_STACK_BYTES of C stack
(`thread_stack_size`): what a Linux main thread has by default, where macOS gives
other threads 512 KiB, little for recursion through C (object printing, LLVM's
passes on a large function).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading

from ..frame_room import call_with_frame_room

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
            outcome["result"] = context.run(call_with_frame_room, function, *args, **kwargs)
        except BaseException as error:  # handed to the caller, raised there
            outcome["error"] = error

    thread = threading.Thread(target=run, name="relax-fresh-stack", daemon=True)
    with thread_stack_size():
        thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
