"""Running a server's accept loop in a thread of this process (tests, notebooks).

The RPC server and the tracker both serve until their `_stop` event is set; this mixin
starts `serve_forever` in a daemon thread and stops it, also as a context manager.
"""

from __future__ import annotations

import threading


class BackgroundService:
    """`start()`, `stop()` and `with` for a class with `serve_forever()`, a `_stop` Event and
    a `_thread` attribute (None until started)."""

    thread_name = "relax-rpc service"

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def start(self):
        """Serves in a background thread; stop() ends it."""
        self._thread = threading.Thread(target=self.serve_forever, daemon=True, name=self.thread_name)
        self._thread.start()
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
