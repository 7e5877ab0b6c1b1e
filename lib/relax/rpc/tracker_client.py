"""Talking to a tracker: clients asking for a server, servers joining the pool.

    tracker = relax.rpc.connect_tracker("lab", 9190, key=b"secret")
    with tracker.request("rpi4") as session:        # waits for a free server of that key
        session.upload("model.vmx")                  # a Session, as relax.rpc.connect gives
    tracker.status()                                 # the pool, as relaxrun --tracker-status prints it

Each request opens a connection of its own to the tracker and keeps it while the session
lasts: closing the session sends `release`, and a client that dies without closing gives
its server back when the operating system closes that connection. The same key serves
for the tracker and for the servers it lends; TLS (`tls_cert`) is for the servers only,
the tracker's messages being addresses (tracker.py).

A server joins with Registration (relaxrun --serve --tracker): it keeps one connection
to the tracker open, which the tracker reads as "still here", and registers again when
that connection is lost (the tracker restarted) until the server stops.
"""

from __future__ import annotations

import contextlib

import socket
import threading

from ..diagnostics import UserError
from . import auth
from .client import CONNECT_TIMEOUT, Session, _handshake, checked, connect
from .framing import VERSION, Message, ProtocolError, receive, send
from .tracker import MESSAGE_LIMIT

RETRY_SECONDS = 5.0  # how long a server waits before registering again with a lost tracker


def _open(host: str, port: int, key: bytes | None, version: int = VERSION) -> socket.socket:
    """An authenticated connection to the tracker at host:port."""
    address = f"{host}:{port}"
    try:
        sock = socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT)
    except OSError as error:
        raise UserError(f"cannot connect to the tracker {address}: {error.strerror or error}") from None
    try:
        _handshake(sock, key, version)
    except (OSError, ProtocolError) as error:
        sock.close()
        raise UserError(f"cannot connect to the tracker {address}: {error}") from None
    except UserError as error:
        sock.close()
        raise UserError(f"the tracker {address} refused: {error}") from None
    return sock


def _ask(sock: socket.socket, header: dict, address: str) -> dict:
    try:
        send(sock, Message(header), MESSAGE_LIMIT)
        return checked(receive(sock, MESSAGE_LIMIT)).header
    except (OSError, ProtocolError) as error:
        raise UserError(f"connection to the tracker {address} lost: {error}") from None


class TrackerClient:
    def __init__(self, host: str, port: int, key=None, tls_cert: str | None = None, version: int = VERSION):
        self.host, self.port = host, int(port)
        self.address = f"{host}:{port}"
        self.key = auth.as_key(key)
        self.tls_cert = tls_cert
        self.socket = _open(host, self.port, self.key, version)  # fails here on a wrong key

    def request(self, device_key: str, timeout: float | None = None, session_timeout: float | None = 300.0) -> Session:
        """A session with a free server of `device_key`, waiting up to `timeout` seconds
        (None: until one is free). Closing the session gives the server back."""
        lease = _open(self.host, self.port, self.key)
        try:
            lease.settimeout(None)  # the wait for a free server may be long
            reply = _ask(lease, {"op": "request", "device_key": device_key, "timeout": timeout}, self.address)
            lease.settimeout(CONNECT_TIMEOUT)
            session = connect(str(reply.get("host")), int(reply.get("port") or 0), key=self.key, tls_cert=self.tls_cert,
                              timeout=session_timeout)
        except BaseException:
            lease.close()
            raise
        session.on_close.append(lambda: _release(lease, self.address))
        return session

    def status(self) -> list[dict]:
        """The pool: per device key, its servers (address, the client holding it or None)
        and how many clients wait."""
        return _ask(self.socket, {"op": "status"}, self.address).get("pool") or []

    def close(self) -> None:
        if self.socket is not None:
            with contextlib.suppress(UserError):
                _ask(self.socket, {"op": "bye"}, self.address)
            self.socket.close()
            self.socket = None

    def __enter__(self) -> "TrackerClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _release(lease: socket.socket, address: str) -> None:
    try:
        _ask(lease, {"op": "release"}, address)
        _ask(lease, {"op": "bye"}, address)
    except UserError:
        pass  # a lost connection has released the server already
    finally:
        lease.close()


def connect_tracker(host: str, port: int, key=None, tls_cert: str | None = None, version: int = VERSION):
    """A client of the tracker at host:port (relaxrun --tracker-serve); `key` as for
    relax.rpc.connect, for the tracker and the servers it lends; `tls_cert` for the servers."""
    return TrackerClient(host, port, key, tls_cert, version)


class Registration:
    """Keeps a server registered with a tracker while it runs (a thread of its own)."""

    def __init__(self, tracker: tuple[str, int], device_key: str, host: str, port: int, key: bytes | None, log):
        self.tracker, self.device_key, self.host, self.port = tracker, device_key, host, port
        self.key, self.log = key, log
        self.address = f"{tracker[0]}:{tracker[1]}"
        self._stop = threading.Event()
        self._socket: socket.socket | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="relax-rpc registration")

    def register(self) -> None:
        """Registers once, raising UserError when the tracker cannot be reached or refuses,
        then keeps the registration in the background."""
        self._register()
        self._thread.start()

    def _register(self) -> None:
        sock = _open(self.tracker[0], self.tracker[1], self.key)
        host = self.host
        if host in ("0.0.0.0", "::", ""):  # the address by which this machine reached the tracker
            host = sock.getsockname()[0]
        try:
            _ask(sock, {"op": "register", "device_key": self.device_key, "host": host, "port": self.port},
                 self.address)
        except UserError:
            sock.close()
            raise
        sock.settimeout(None)
        self._socket = sock
        self.log(f"relaxrun: registered with the tracker {self.address} as '{self.device_key}'")

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(ProtocolError):
                receive(self._socket, MESSAGE_LIMIT)  # the tracker sends nothing: this returns when it goes
            self._socket.close()
            if self._stop.is_set():
                return
            self.log(f"relaxrun: lost the tracker {self.address}; registering again every {RETRY_SECONDS:g} s")
            while not self._stop.wait(RETRY_SECONDS):
                try:
                    self._register()
                    break
                except UserError:
                    continue

    def stop(self) -> None:
        self._stop.set()
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.shutdown(socket.SHUT_RDWR)
        if self._thread.is_alive():
            self._thread.join(timeout=5)
