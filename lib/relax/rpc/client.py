"""The client side: a session with a server, its uploads, modules and devices.

    session = relax.rpc.connect("127.0.0.1", 9090, key=b"secret")
    session.upload("model.vmx")                       # skipped when the server holds the same bytes
    exe = session.load_module("model.vmx")             # checked there as relax.vm.load checks it
    vm = relax.VirtualMachine(exe, session.cpu())      # remote_vm.RemoteVirtualMachine
    y = vm["main"](x)

A failure the server reports for a request raises RemoteError (a UserError: relaxrun
prints it and exits 1) and the session goes on; a lost connection raises UserError too.
"""

from __future__ import annotations

import contextlib

import hashlib
import os
import socket

from ..diagnostics import UserError
from . import auth
from .framing import DEFAULT_MESSAGE_LIMIT, VERSION, Message, ProtocolError, greeting, receive, send

CONNECT_TIMEOUT = 10.0


class RemoteError(UserError):
    """An error the server reported for one request; `backtrace` is its VM backtrace text, if any."""

    def __init__(self, message: str, backtrace: str = ""):
        super().__init__(message)
        self.message = message
        self.backtrace = backtrace


class RemoteDevice:
    """A device of the server (`session.cpu(0)`), for relax.VirtualMachine(exe, device)."""

    def __init__(self, session: "Session", kind: str, index: int):
        self.session = session
        self.kind = kind
        self.index = index

    def __str__(self) -> str:
        return f"{self.kind}:{self.index}" if self.index else self.kind

    def __repr__(self) -> str:
        return f"remote {self.kind}({self.index})"


class RemoteModule:
    """An executable loaded on the server; `functions` maps each VM function to its
    parameter names, argument count and signature record."""

    def __init__(self, session: "Session", index: int, name: str, sha256: str, functions: list[dict]):
        self.remote_session = session
        self.index = index
        self.name = name
        self.sha256 = sha256
        self.functions = {f["name"]: f for f in functions if isinstance(f, dict) and isinstance(f.get("name"), str)}


class Session:
    def __init__(self, sock: socket.socket, address: str, message_limit: int = DEFAULT_MESSAGE_LIMIT + (1 << 20)):
        self.socket = sock
        self.address = address
        self.message_limit = message_limit
        self.on_close: list = []  # called once the session ends (a tracker's lease gives its server back)

    # ---- the Python API --------------------------------------------------------------

    def upload(self, path: str, target: str | None = None) -> str:
        """Sends the file `path` to the server as `target` (default: its base name); returns that name."""
        from ..vm.bytecode.loader import read_file

        return self.upload_bytes(read_file(path), target or os.path.basename(path))

    def upload_bytes(self, data: bytes, name: str) -> str:
        digest = hashlib.sha256(data).hexdigest()
        if self.request({"op": "has", "sha256": digest}).header.get("present"):
            self.request({"op": "upload", "name": name, "sha256": digest})
        else:
            self.request({"op": "upload", "name": name}, [data])
        return name

    def load_module(self, name: str) -> RemoteModule:
        reply = self.request({"op": "load", "name": name}).header
        return RemoteModule(self, reply.get("module"), name, reply.get("sha256", ""), reply.get("functions") or [])

    def cpu(self, index: int = 0) -> RemoteDevice:
        return RemoteDevice(self, "cpu", index)

    def cuda(self, index: int = 0) -> RemoteDevice:
        return RemoteDevice(self, "cuda", index)

    def close(self) -> None:
        if self.socket is None:
            return
        try:
            with contextlib.suppress(UserError):
                self.request({"op": "bye"})
        finally:
            self.socket.close()
            self.socket = None
            for callback in self.on_close:
                callback()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- messages --------------------------------------------------------------------

    def request(self, header: dict, blobs=()) -> Message:
        """Sends one request and returns the server's reply; RemoteError if it reports one."""
        if self.socket is None:
            raise UserError(f"the session with {self.address} is closed")
        try:
            send(self.socket, Message(header, list(blobs)), self.message_limit)
            reply = receive(self.socket, self.message_limit)
        except ProtocolError as error:
            raise UserError(f"connection to the server {self.address} lost: {error}") from None
        return checked(reply)


def checked(reply: Message) -> Message:
    if reply.header.get("type") == "error":
        message = str(reply.header.get("message", "the server reported an error"))
        raise RemoteError(message, str(reply.header.get("backtrace") or ""))
    return reply


def connect(host: str, port: int, key=None, tls_cert: str | None = None, timeout: float | None = 300.0,
            version: int = VERSION) -> Session:
    """A session with the server at host:port; `key` (str or bytes) answers its challenge,
    `tls_cert` (the server's certificate or its CA) turns on TLS. `timeout`: seconds to
    wait for any one reply (a long time_evaluator needs a larger one, None waits forever)."""
    address = f"{host}:{port}"
    try:
        sock = socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT)
    except OSError as error:
        raise UserError(f"cannot connect to {address}: {error.strerror or error}") from None
    try:
        context = auth.client_tls(tls_cert)
        if context is not None:
            sock = context.wrap_socket(sock, server_hostname=host)
        sock.settimeout(timeout)
        _handshake(sock, auth.as_key(key), version)
    except (OSError, ProtocolError) as error:
        sock.close()
        raise UserError(f"cannot connect to {address}: {error}") from None
    except UserError:
        sock.close()
        raise
    return Session(sock, address)


def _handshake(sock: socket.socket, key: bytes | None, version: int) -> None:
    sock.sendall(greeting(version))
    challenge = checked(receive(sock, 1 << 16)).header
    nonce = challenge.get("nonce")
    if challenge.get("type") != "challenge" or not isinstance(nonce, str):
        raise ProtocolError("the server did not answer with a challenge (is it a relax.rpc server?)")
    reply = {"type": "auth"}
    client_nonce = auth.new_nonce()
    if key is not None and challenge.get("auth"):
        reply.update(proof=auth.proof(key, "client", nonce), nonce=client_nonce)
    send(sock, Message(reply))
    welcome = checked(receive(sock, 1 << 16)).header
    if key is not None and challenge.get("auth") and not auth.check(key, "server", client_nonce,
                                                                     welcome.get("proof")):
        raise ProtocolError("the server could not prove it holds the key")
