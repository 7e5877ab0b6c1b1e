"""Worker threads that run submitted calls, for the part compiler (object_parts.py).

What the part compiler needs of concurrent.futures' ThreadPoolExecutor: threads
started as calls arrive, up to a limit; a handle per call whose `result()` waits
and returns the value or raises the call's error; closing cancels the calls not
started and waits for the running ones; at the interpreter's exit, a pool still
open is closed, so that no worker is inside LLVM while the process ends.
concurrent.futures imports logging with it, and the one-shot build imports the
code generator between the passes and its first kernel part, with no other core
busy yet (docs/performance-notes.md): this module imports nothing new.
"""

from __future__ import annotations

import atexit
import queue
import threading
import weakref

_OPEN_POOLS: "weakref.WeakSet[WorkerPool]" = weakref.WeakSet()


class CancelledCall(RuntimeError):
    """What `result()` of a call raises when its pool closed before the call started."""


class PendingCall:
    """A submitted call: `result()` waits for it to be run."""

    __slots__ = ("_call", "_done", "_value", "_error")

    def __init__(self, call):
        self._call = call
        self._done = threading.Event()
        self._value = self._error = None

    def result(self):
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def _run(self) -> None:
        try:
            self._value = self._call()
        except BaseException as error:  # handed to whoever asks for the result
            self._error = error
        finally:
            self._call = None

    def _finish(self) -> None:
        self._done.set()

    def _cancel(self) -> None:
        self._call = None
        self._error = CancelledCall("the worker pool closed before this call started")
        self._done.set()


class WorkerPool:
    """At most `workers` daemon threads named `{name}_{i}`, started one per submitted call
    while none is idle. Each thread is started under `start_context()` (a context manager
    factory: the caller's thread stack size, say)."""

    def __init__(self, workers: int, name: str, start_context=None):
        self._limit = max(1, workers)
        self._name = name
        self._start_context = start_context
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._closed = False
        _OPEN_POOLS.add(self)

    def submit(self, function, *args) -> PendingCall:
        call = PendingCall(lambda: function(*args))
        with self._lock:
            if self._closed:
                raise RuntimeError("submit to a closed worker pool")
            self._calls.put(call)
            if self._idle:
                self._idle -= 1  # an idle worker takes this call
            elif len(self._threads) < self._limit:
                self._start_thread()
        return call

    def close(self) -> None:
        """Cancels the calls not started and waits for the running ones; the threads end."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = list(self._threads)
        while True:
            try:
                call = self._calls.get_nowait()
            except queue.Empty:
                break
            if call is not None:
                call._cancel()
        for _ in threads:
            self._calls.put(None)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join()
        _OPEN_POOLS.discard(self)

    def _start_thread(self) -> None:
        thread = threading.Thread(target=self._work, name=f"{self._name}_{len(self._threads)}", daemon=True)
        if self._start_context is None:
            thread.start()
        else:
            with self._start_context():
                thread.start()
        self._threads.append(thread)

    def _work(self) -> None:
        while True:
            call = self._calls.get()
            if call is None:
                return
            call._run()
            with self._lock:  # counted idle before its caller hears, so that its next call reuses it
                self._idle += 1
            call._finish()


@atexit.register
def _close_open_pools() -> None:
    for pool in list(_OPEN_POOLS):
        pool.close()
