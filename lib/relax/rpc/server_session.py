"""One client's session on the server: greeting, authentication, then requests until "bye".

    greeting (magic, version) -> challenge -> auth (client's proof) -> welcome (server's proof)
    -> request / reply ... -> bye

Whatever goes wrong ends this session only: a protocol error (garbage, a wrong version
or key, an oversized or cut frame, a stalled or dropped client) is answered with an
error message where the connection still takes one; a request that fails (a bad
artifact, a failing model) is answered with its error and the session goes on. The
session's folder is removed and one log line written (peer, artifact sha256, result)
whatever happened.
"""

from __future__ import annotations

import contextlib

import os
import shutil
import socket
import ssl
import tempfile

from . import auth
from .framing import VERSION, Message, ProtocolError, read_greeting, receive, send

HANDSHAKE_LIMIT = 64 << 10  # bytes of a message before the client is authenticated


class SessionState:
    """What one session holds: its folder, its uploads by name, its modules and VMs by number."""

    def __init__(self, server, peer: str):
        self.server = server
        self.peer = peer
        self.folder = tempfile.mkdtemp(prefix="session-", dir=server.folder)
        self.uploads: dict[str, str] = {}  # name -> sha256
        self.modules: list = []  # (executable, name)
        self.vms: list = []
        self.artifacts: list[str] = []  # sha256 of each loaded artifact, for the log line
        self.requests = 0

    def file(self, digest: str) -> str:
        return os.path.join(self.folder, digest)

    def close(self) -> None:
        self.modules.clear()
        self.vms.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def serve_session(server, connection: socket.socket, peer) -> None:
    config = server.config
    where = f"{peer[0]}:{peer[1]}"
    state = SessionState(server, where)
    outcome = "ok"
    connection.settimeout(config.idle_timeout)
    try:
        if config.tls is not None:
            connection = _wrap_tls(config.tls, connection)
        handshake(connection, config.key)
        outcome = _serve_requests(state, connection)
    except ProtocolError as error:
        outcome = f"error: {error}"
        _tell(connection, str(error))
    except Exception as error:  # noqa: BLE001 - a bug in a session must not reach the server
        outcome = f"internal error: {type(error).__name__}: {error}"
        _tell(connection, f"internal error on the server: {type(error).__name__}: {error}")
    finally:
        _close(connection)
        state.close()
        artifacts = ", ".join(f"sha256:{digest[:16]}" for digest in state.artifacts) or "no artifact"
        config.log(f"relaxrun: session {where}: {artifacts}: {state.requests} requests: {outcome}")


def handshake(connection: socket.socket, key: bytes | None) -> None:
    version = read_greeting(connection)
    if version != VERSION:
        raise ProtocolError(f"protocol version {version} is not supported (this server speaks version {VERSION})")
    nonce = auth.new_nonce()
    send(connection, Message({"type": "challenge", "version": VERSION, "nonce": nonce, "auth": key is not None}))
    reply = receive(connection, HANDSHAKE_LIMIT).header
    if reply.get("type") != "auth":
        raise ProtocolError("expected the client's auth message")
    if key is None:
        send(connection, Message({"type": "welcome"}))
        return
    if "proof" not in reply:
        raise ProtocolError("authentication failed: this server needs a key (--key-file)")
    if not auth.check(key, "client", nonce, reply.get("proof")):
        raise ProtocolError("authentication failed: wrong key")
    client_nonce = reply.get("nonce")
    if not isinstance(client_nonce, str) or len(client_nonce) > 256:
        raise ProtocolError("authentication failed: the client sent no nonce")
    send(connection, Message({"type": "welcome", "proof": auth.proof(key, "server", client_nonce)}))


def _serve_requests(state: SessionState, connection) -> str:
    from .server_requests import handle

    limit = state.server.config.message_limit
    while True:
        message = receive(connection, limit)
        if message.header.get("op") == "bye":
            send(connection, Message({"type": "ok"}), limit)
            return "ok"
        state.requests += 1
        send(connection, handle(state, message), limit)


def _wrap_tls(context: ssl.SSLContext, connection: socket.socket):
    try:
        return context.wrap_socket(connection, server_side=True)
    except (ssl.SSLError, OSError) as error:
        raise ProtocolError(f"TLS handshake failed: {error}") from None


def _tell(connection, message: str) -> None:
    """Sends an error message if the connection still takes one (a closed one does not)."""
    with contextlib.suppress(OSError, ProtocolError):
        connection.settimeout(1.0)
        send(connection, Message({"type": "error", "message": message, "fatal": True}))


def _close(connection) -> None:
    """Closes after reading a little of what the client still sends: closing a socket with
    unread data resets the connection, and the client would lose the error message."""
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_WR)
        connection.settimeout(0.2)
        for _ in range(16):
            if not connection.recv(1 << 16):
                break
    connection.close()
