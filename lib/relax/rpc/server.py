"""The RPC server: accepts connections and serves each in a thread of its own.

    server = Server(ServerConfig(port=0, key=b"secret")); server.start()   # tests, the Python API
    Server(config).serve_forever()                                           # relaxrun --serve

Every session runs in server_session.py: greeting, authentication, requests, each in a
temporary folder of its own under the server's folder (itself under --workdir), removed
when the session ends; the server's folder, holding the content-addressed artifact store,
is removed when the server stops. A session that fails (garbage, a dropped or stalled
connection, a failing model) ends alone: the accept loop never sees its errors.

Only the runtime is imported here and in what the sessions import (the VM, the loader,
the driver's run helpers), never the compiler.
"""

from __future__ import annotations

import contextlib

import hashlib
import os
import shutil
import socket
import ssl
import sys
import tempfile
import threading
from dataclasses import field
from typing import Callable

from ..diagnostics import UserError
from ..records import record
from .framing import DEFAULT_MESSAGE_LIMIT
from .background import BackgroundService

ACCEPT_POLL_SECONDS = 0.2  # how often the accept loop looks at the stop flag
STORE_LIMIT = 64  # artifacts kept in the store; the oldest goes first


def _stderr_log(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@record(mutable=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 0  # 0: any free port (Server.port tells which)
    key: bytes | None = None  # the shared secret of the HMAC challenge; None: no authentication
    tls: ssl.SSLContext | None = None
    workdir: str | None = None  # where the server's temporary folder goes (default: the system's)
    max_upload_bytes: int = DEFAULT_MESSAGE_LIMIT
    idle_timeout: float = 300.0  # seconds a session may stay silent
    log: Callable[[str], None] = field(default=_stderr_log)

    @property
    def message_limit(self) -> int:
        return self.max_upload_bytes + (1 << 20)  # an upload and its header


class ArtifactStore:
    """Uploaded artifacts by sha256, shared by the sessions so that a re-upload is skipped."""

    def __init__(self, folder: str):
        self.folder = folder
        self._order: list[str] = []
        self._lock = threading.Lock()
        os.makedirs(folder)

    def path(self, digest: str) -> str:
        return os.path.join(self.folder, digest)

    def has(self, digest: str) -> bool:
        with self._lock:
            return digest in self._order

    def add(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            if digest in self._order:
                return digest
            with open(self.path(digest) + ".part", "wb") as handle:
                handle.write(data)
            os.replace(self.path(digest) + ".part", self.path(digest))
            self._order.append(digest)
            while len(self._order) > STORE_LIMIT:
                os.unlink(self.path(self._order.pop(0)))
        return digest

    def copy_to(self, digest: str, target: str) -> bool:
        """Puts the artifact at `target` (a session's folder); False if it is no longer stored."""
        with self._lock:
            if digest not in self._order:
                return False
            try:
                os.link(self.path(digest), target)
            except OSError:  # a file system without hard links
                shutil.copyfile(self.path(digest), target)
        return True


class Server(BackgroundService):
    thread_name = "relax-rpc server"

    def __init__(self, config: ServerConfig):
        self.config = config
        self.listen(config.host, config.port)
        try:
            self.folder = tempfile.mkdtemp(prefix="relax-rpc-", dir=config.workdir)
        except OSError as error:
            self.socket.close()
            raise UserError(f"--workdir '{config.workdir}': {error.strerror or error}") from None
        self.store = ArtifactStore(os.path.join(self.folder, "store"))
        self.load_lock = threading.Lock()  # loading and JIT compilation, one session at a time
        self._stop = threading.Event()
        self._sessions: dict[threading.Thread, socket.socket] = {}
        self._sessions_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        return f"{self.config.host}:{self.port}"

    def serve_forever(self) -> None:
        """Accepts connections until stop(); then ends the sessions and removes the folder."""
        from .server_session import serve_session

        self.socket.settimeout(ACCEPT_POLL_SECONDS)
        try:
            while not self._stop.is_set():
                try:
                    connection, peer = self.socket.accept()
                except socket.timeout:
                    continue
                except OSError:
                    if self._stop.is_set():
                        break
                    continue  # a connection reset before it was accepted
                thread = threading.Thread(target=self._run_session, args=(serve_session, connection, peer),
                                          daemon=True, name=f"relax-rpc {peer[0]}:{peer[1]}")
                with self._sessions_lock:
                    self._sessions[thread] = connection
                thread.start()
        finally:
            self._shut_down()

    def _run_session(self, serve_session, connection, peer) -> None:
        try:
            serve_session(self, connection, peer)
        finally:
            with self._sessions_lock:
                self._sessions.pop(threading.current_thread(), None)

    def _shut_down(self) -> None:
        self.socket.close()
        with self._sessions_lock:
            sessions = list(self._sessions.items())
        for _, connection in sessions:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)  # wakes a session waiting for its client
        for thread, _ in sessions:
            thread.join(timeout=5)
        shutil.rmtree(self.folder, ignore_errors=True)
