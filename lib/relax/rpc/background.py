"""Running a server's accept loop in a thread of this process (tests, notebooks).

The RPC server and the tracker both serve until their `_stop` event is set; this mixin
starts `serve_forever` in a daemon thread and stops it, also as a context manager.
"""

from __future__ import annotations

import socket
import threading

from ..diagnostics import UserError


class BackgroundService:
    """`start()`, `stop()` and `with` for a class with `serve_forever()`, a `_stop` Event and
    a `_thread` attribute (None until started)."""

    thread_name = "relax-rpc service"

    def listen(self, host: str, port: int) -> None:
        """The listening socket on host:port (port 0: any free one), in `socket` and `port`."""
        try:
            self.socket = socket.create_server((host, port))
        except OSError as error:
            raise UserError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
        self.port = self.socket.getsockname()[1]

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
