"""A relax.rpc server refuses bad clients one session at a time and keeps serving the others."""

import os
import socket
import struct
import threading

import numpy as np
import pytest

import relax
from relax import rpc
from relax.diagnostics import UserError
from relax.rpc.framing import GREETING, MAGIC, Message, receive, send


def _still_serves(server, artifact):
    with rpc.connect("127.0.0.1", server.port, key="secret") as session:
        session.upload(artifact("tuples"))
        vm = relax.VirtualMachine(session.load_module("tuples.vmx"), session.cpu())
        ones = np.ones((3, 4), np.float32)
        return vm["main"](ones, ones)[1]


def _raw(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.settimeout(5)
    return sock


def _error_after(sock) -> str:
    """The error message the server sends before it closes the connection."""
    return receive(sock).header.get("message", "")


@pytest.mark.parametrize("key, message", [("wrong", "wrong key"), (None, "needs a key")])
def test_wrong_or_no_key_refused(server, artifact, key, message):
    with pytest.raises(UserError, match=message):
        rpc.connect("127.0.0.1", server.port, key=key)
    assert _still_serves(server, artifact).shape == (3, 4)


def test_wrong_version_random_bytes_oversized_and_half_frames_refused(server, artifact):
    with pytest.raises(UserError, match="protocol version 9 is not supported"):
        rpc.connect("127.0.0.1", server.port, key="secret", version=9)
    with _raw(server) as sock:
        sock.sendall(os.urandom(64))
        assert "not a relax.rpc client" in _error_after(sock)
    with _raw(server) as sock:  # past the greeting, a frame promising 1 TiB before authentication
        sock.sendall(GREETING.pack(MAGIC, 1))
        receive(sock)
        sock.sendall(struct.pack("!Q", 1 << 40) + b"x" * 100)
        assert "exceeds the limit" in _error_after(sock)
    with _raw(server) as sock:  # half a frame, then the client goes away
        sock.sendall(GREETING.pack(MAGIC, 1))
        receive(sock)
        sock.sendall(struct.pack("!Q", 1000) + b"{" * 10)
    with _raw(server) as sock:  # a frame whose inner lengths lie
        sock.sendall(GREETING.pack(MAGIC, 1))
        receive(sock)
        sock.sendall(struct.pack("!QI", 8, 500) + b"{}{}")
        assert "cut short" in _error_after(sock)
    assert _still_serves(server, artifact).shape == (3, 4)


def test_stalled_client_times_out(tmp_path, artifact):
    lines = []
    config = rpc.ServerConfig(port=0, key=b"secret", workdir=str(tmp_path), idle_timeout=0.3, log=lines.append)
    with rpc.Server(config) as server:
        with _raw(server) as sock:
            sock.sendall(GREETING.pack(MAGIC, 1))
            receive(sock)  # the challenge; the client answers nothing
            assert "idle timeout" in _error_after(sock)
        assert _still_serves(server, artifact).shape == (3, 4)


def test_unauthenticated_request_and_unknown_op(server):
    session = rpc.connect("127.0.0.1", server.port, key="secret")
    with pytest.raises(UserError, match="unknown request 'format_disk'"):
        session.request({"op": "format_disk"})
    with pytest.raises(UserError, match="closed"):
        session.request({"op": "has", "sha256": "0" * 64})
    session.socket.close()


def test_eight_concurrent_clients(server, artifact):
    path = artifact("tuples")
    results, errors = [], []

    def client(index):
        try:
            with rpc.connect("127.0.0.1", server.port, key="secret") as session:
                session.upload(path)
                vm = relax.VirtualMachine(session.load_module("tuples.vmx"), session.cpu())
                x = np.full((3, 4), float(index), np.float32)
                results.append((index, vm["main"](x, x)[1]))
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and len(results) == 8
    local = relax.VirtualMachine(relax.load(path))["main"]
    for index, y in results:
        x = np.full((3, 4), float(index), np.float32)
        np.testing.assert_array_equal(y, local(x, x)[1])


def test_message_roundtrip_bounds():
    left, right = socket.socketpair()
    with left, right:
        send(left, Message({"op": "x"}, [b"abc"]))
        got = receive(right)
        assert got.header == {"op": "x"} and got.blobs == [b"abc"]
        send(left, Message({"op": "y"}, [b"a" * 100]))
        with pytest.raises(rpc.framing.ProtocolError, match="exceeds the limit of 50"):
            receive(right, 50)
