"""The tracker: a pool of servers per device key, one free server lent to each client.

    tracker = Tracker(TrackerConfig(port=0, key=b"secret")).start()   # tests, the Python API
    Tracker(config).serve_forever()                                     # relaxrun --tracker-serve

Servers (`relaxrun --serve ... --tracker HOST:PORT --device-key NAME`) and clients
(`relax.rpc.connect_tracker`, `relaxrun --remote tracker://...`) speak the RPC greeting
and handshake (same version, same HMAC scheme, server_session.handshake) and then the
tracker's own requests (docs/rpc.md): `register`, `request`, `release`, `status`, `bye`.
A connection holds at most one registration or one lease, and ending the connection
ends both: a server that stops leaves the pool, a client that disappears gives its
server back. The tracker never touches an artifact; it only says who runs where, so its
connections carry addresses, not secrets: they are authenticated (the HMAC handshake)
but not encrypted, whatever TLS the servers use.
"""

from __future__ import annotations

import contextlib

import select
import socket
import threading
from dataclasses import field
from typing import Callable

from ..records import record
from .framing import Message, ProtocolError, receive, send
from .server import ACCEPT_POLL_SECONDS, _stderr_log
from .server_session import _close, _tell, handshake
from .tracker_pool import Pool
from .background import BackgroundService

MESSAGE_LIMIT = 64 << 10  # tracker requests are small JSON headers
HANDSHAKE_SECONDS = 10.0  # a connection that does not authenticate by then is dropped
MAX_NAME = 256  # characters of a device key or host


@record(mutable=True)
class TrackerConfig:
    host: str = "127.0.0.1"
    port: int = 0
    key: bytes | None = None
    log: Callable[[str], None] = field(default=_stderr_log)


class Tracker(BackgroundService):
    thread_name = "relax-rpc tracker"

    def __init__(self, config: TrackerConfig):
        self.config = config
        self.listen(config.host, config.port)
        self.pool = Pool()
        self._stop = threading.Event()
        self._connections: dict[threading.Thread, socket.socket] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        self.socket.settimeout(ACCEPT_POLL_SECONDS)
        try:
            while not self._stop.is_set():
                try:
                    connection, peer = self.socket.accept()
                except (socket.timeout, OSError):
                    continue
                thread = threading.Thread(target=self._serve, args=(connection, peer), daemon=True,
                                          name=f"relax-rpc tracker {peer[0]}:{peer[1]}")
                with self._lock:
                    self._connections[thread] = connection
                thread.start()
        finally:
            self.socket.close()
            with self._lock:
                connections = list(self._connections.items())
            for _, connection in connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
            for thread, _ in connections:
                thread.join(timeout=5)

    def _serve(self, connection: socket.socket, peer) -> None:
        link = _Link(self, connection, f"{peer[0]}:{peer[1]}")
        try:
            link.run()
        finally:
            with self._lock:
                self._connections.pop(threading.current_thread(), None)


class _Link:
    """One connection to the tracker: a server's registration or a client's requests."""

    def __init__(self, tracker: Tracker, connection: socket.socket, peer: str):
        self.tracker = tracker
        self.pool = tracker.pool
        self.connection = connection
        self.peer = peer
        self.lease = None
        self.registered = False

    def run(self) -> None:
        log = self.tracker.config.log
        try:
            self.connection.settimeout(HANDSHAKE_SECONDS)
            handshake(self.connection, self.tracker.config.key)
            # A registration or a lease lasts as long as its connection, silent meanwhile;
            # keep-alive probes find a peer that vanished without closing.
            self.connection.settimeout(None)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            while self._answer(receive(self.connection, MESSAGE_LIMIT)):
                pass
        except ProtocolError as error:
            if str(error) != "connection closed":
                log(f"relaxrun: tracker: {self.peer}: {error}")
                _tell(self.connection, str(error))
        finally:
            self._end_lease()
            for entry in self.pool.unregister(self):
                log(f"relaxrun: tracker: server {entry.address} ('{entry.device_key}') left")
            _close(self.connection)

    def _answer(self, message: Message) -> bool:
        """Answers one request; False after `bye`."""
        header = message.header
        op = header.get("op")
        if op == "bye":
            send(self.connection, Message({"type": "ok"}))
            return False
        if op == "register":
            reply = self._register(header)
        elif op == "request":
            reply = self._request(header)
        elif op == "release":
            self._end_lease()
            reply = {"type": "ok"}
        elif op == "status":
            reply = {"type": "ok", "pool": self.pool.status()}
        else:
            raise ProtocolError(f"unknown tracker request {str(op)[:64]!r}")
        send(self.connection, Message(reply))
        return True

    def _register(self, header: dict) -> dict:
        device_key, host, port = (header.get(name) for name in ("device_key", "host", "port"))
        _check_name(device_key, "device_key")
        _check_name(host, "host")
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise ProtocolError("register: 'port' must be a port number")
        if self.registered or self.lease is not None:
            return {"type": "error", "message": "this connection already holds a registration or a server"}
        self.registered = True
        entry = self.pool.register(self, device_key, host, port)
        self.tracker.config.log(f"relaxrun: tracker: server {entry.address} registered as '{device_key}'")
        return {"type": "ok", "server": entry.number}

    def _request(self, header: dict) -> dict:
        device_key, timeout = header.get("device_key"), header.get("timeout")
        _check_name(device_key, "device_key")
        if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout < 0):
            raise ProtocolError("request: 'timeout' must be a number of seconds or null")
        if self.registered or self.lease is not None:
            return {"type": "error", "message": "this connection already holds a registration or a server"}
        try:
            entry = self.pool.acquire(device_key, self.peer, self._gone, timeout)
        except LookupError as error:
            return {"type": "error", "message": str(error)}
        if entry is None:
            raise ProtocolError("connection closed")  # the client left while it waited
        self.lease = entry
        self.tracker.config.log(f"relaxrun: tracker: {self.peer} got server {entry.address} ('{device_key}')")
        return {"type": "ok", "host": entry.host, "port": entry.port}

    def _end_lease(self) -> None:
        if self.lease is not None:
            self.pool.release(self.lease)
            self.tracker.config.log(f"relaxrun: tracker: {self.peer} gave back server {self.lease.address}")
            self.lease = None

    def _gone(self) -> bool:
        """Whether a waiting client closed its connection: it sends nothing while it waits,
        so anything readable is its end (or a breach of the protocol, which ends it too)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)


def _check_name(value, field_name: str) -> None:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME:
        raise ProtocolError(f"'{field_name}' must be a string of 1 to {MAX_NAME} characters")
