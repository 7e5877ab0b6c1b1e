"""The wire format of relax.rpc: a greeting, then length-prefixed messages (docs/rpc.md).

A message is one frame:

    u64 length (big-endian) | u32 header length | header (UTF-8 JSON object)
                            | u16 blob count | per blob: u64 length | bytes

`length` counts everything after itself and is checked against the receiver's limit
before a byte of the body is read, so a peer cannot make the other side allocate more
than it allows; every inner length is checked against what the frame holds. Blobs carry
tensors as .npy bytes and artifacts as their file bytes; nothing is ever unpickled.

Before the first message the client sends the greeting, MAGIC and a u16 version, so a
server can refuse random bytes and other protocol versions with a clear message.
"""

from __future__ import annotations

import json
import socket
import struct

MAGIC = b"RELAXRPC"
VERSION = 1
GREETING = struct.Struct("!8sH")
HEADER_LIMIT = 1 << 20  # bytes of JSON in one message: requests and replies are small apart from blobs
MAX_BLOBS = 4096
DEFAULT_MESSAGE_LIMIT = 256 << 20  # bytes in one frame unless the server or client sets its own


class ProtocolError(Exception):
    """The peer sent something that is not this protocol, or closed, or stalled: the session ends."""


class Message:
    """A decoded message: the JSON header (a dict) and the binary blobs it refers to by index."""

    __slots__ = ("header", "blobs")

    def __init__(self, header: dict, blobs: list[bytes] | None = None):
        self.header = header
        self.blobs = blobs or []

    def __repr__(self) -> str:
        return f"Message({self.header!r}, {len(self.blobs)} blobs)"


def greeting(version: int = VERSION) -> bytes:
    return GREETING.pack(MAGIC, version)


def read_greeting(sock: socket.socket) -> int:
    """The protocol version a client's greeting asks for; ProtocolError if it is no greeting."""
    data = _receive(sock, GREETING.size, "the greeting")
    magic, version = GREETING.unpack(data)
    if magic != MAGIC:
        raise ProtocolError("not a relax.rpc client (the connection did not start with the protocol greeting)")
    return version


def encode(message: Message) -> bytes:
    header = json.dumps(message.header, separators=(",", ":"), allow_nan=False).encode()
    if len(header) > HEADER_LIMIT:
        raise ProtocolError(f"message header of {len(header)} bytes exceeds the limit of {HEADER_LIMIT}")
    if len(message.blobs) > MAX_BLOBS:
        raise ProtocolError(f"message with {len(message.blobs)} blobs exceeds the limit of {MAX_BLOBS}")
    parts = [struct.pack("!I", len(header)), header, struct.pack("!H", len(message.blobs))]
    for blob in message.blobs:
        parts += [struct.pack("!Q", len(blob)), blob]
    body = b"".join(parts)
    return struct.pack("!Q", len(body)) + body


def send(sock: socket.socket, message: Message, limit: int = DEFAULT_MESSAGE_LIMIT) -> None:
    data = encode(message)
    if len(data) - 8 > limit:
        raise ProtocolError(f"message of {len(data) - 8} bytes exceeds the limit of {limit} bytes")
    sock.sendall(data)


def receive(sock: socket.socket, limit: int = DEFAULT_MESSAGE_LIMIT) -> Message:
    """The next message; ProtocolError on a closed or stalled connection or a malformed frame."""
    (length,) = struct.unpack("!Q", _receive(sock, 8, "a message length"))
    if length > limit:
        raise ProtocolError(f"message of {length} bytes exceeds the limit of {limit} bytes")
    return decode(_receive(sock, length, "a message"))


def decode(body: bytes) -> Message:
    reader = _Reader(body)
    header_bytes = reader.take(reader.unpack("!I"), "the header")
    if len(header_bytes) > HEADER_LIMIT:
        raise ProtocolError(f"message header of {len(header_bytes)} bytes exceeds the limit of {HEADER_LIMIT}")
    try:
        header = json.loads(header_bytes.decode())
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ProtocolError("message header is not JSON") from None
    if not isinstance(header, dict):
        raise ProtocolError("message header is not a JSON object")
    count = reader.unpack("!H")
    if count > MAX_BLOBS:
        raise ProtocolError(f"message with {count} blobs exceeds the limit of {MAX_BLOBS}")
    blobs = [reader.take(reader.unpack("!Q"), "a blob") for _ in range(count)]
    if reader.offset != len(body):
        raise ProtocolError(f"message has {len(body) - reader.offset} bytes after its last blob")
    return Message(header, blobs)


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.offset = 0

    def take(self, size: int, what: str) -> bytes:
        if self.offset + size > len(self.data):
            raise ProtocolError(f"message is cut short in {what}")
        chunk = self.data[self.offset:self.offset + size]
        self.offset += size
        return chunk

    def unpack(self, layout: str) -> int:
        (value,) = struct.unpack(layout, self.take(struct.calcsize(layout), "a length"))
        return value


def _receive(sock: socket.socket, size: int, what: str) -> bytes:
    """Exactly `size` bytes, read in chunks so that a lying length allocates only what arrives."""
    chunks = []
    left = size
    while left:
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except socket.timeout:
            raise ProtocolError(f"the peer sent nothing for too long while {what} was expected (idle timeout)") from None
        except OSError as error:
            raise ProtocolError(f"connection lost: {error}") from None
        if not chunk:
            got = size - left
            raise ProtocolError("connection closed" + (f" in the middle of {what}" if got else ""))
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
