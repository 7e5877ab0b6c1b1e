"""Commands and answers as bytes, for the sessions whose workers are other processes.

    message = u32 header length | JSON header | blobs, each u64 length | bytes

The header of a command is {"kind", "args", "free", "reply_from"}; an argument is
{"ref": id} for an object of the worker's table, else a VM value in relax.rpc's value
encoding (tensors as .npy blobs written without pickle, read back with the bounded
reader). An answer is {"status": "ok", "value": ...} or {"status": "error", "message",
"aborted"}. Nothing a peer sends is unpickled. `per_worker` is resolved before encoding:
each rank gets its own message with its item appended to the arguments.
"""

from __future__ import annotations

import json
import struct

from ..diagnostics import UserError
from ..rpc.framing import ProtocolError
from ..rpc.values import decode_value, encode_value
from .executor import Command, Ref

MAX_HEADER_BYTES = 1 << 24


def _pack(header: dict, blobs: list[bytes]) -> bytes:
    text = json.dumps(header, separators=(",", ":")).encode()
    parts = [struct.pack("<I", len(text)), text]
    for blob in blobs:
        parts += [struct.pack("<Q", len(blob)), blob]
    return b"".join(parts)


def _unpack(data: bytes) -> tuple[dict, list[bytes]]:
    if len(data) < 4:
        raise ProtocolError("truncated disco message")
    (size,) = struct.unpack_from("<I", data)
    if size > MAX_HEADER_BYTES or 4 + size > len(data):
        raise ProtocolError("malformed disco message header")
    try:
        header = json.loads(data[4:4 + size])
    except ValueError:
        raise ProtocolError("malformed disco message header") from None
    blobs, offset = [], 4 + size
    while offset < len(data):
        if offset + 8 > len(data):
            raise ProtocolError("truncated disco message")
        (length,) = struct.unpack_from("<Q", data, offset)
        offset += 8
        if offset + length > len(data):
            raise ProtocolError("truncated disco message")
        blobs.append(data[offset:offset + length])
        offset += length
    if not isinstance(header, dict):
        raise ProtocolError("malformed disco message header")
    return header, blobs


def encode_command(command: Command, rank: int) -> bytes:
    args = command.args if command.per_worker is None else (*command.args, command.per_worker[rank])
    blobs: list[bytes] = []
    encoded = [{"ref": arg.id} if isinstance(arg, Ref) else encode_value(arg, blobs) for arg in args]
    header = {"kind": command.kind, "args": encoded, "free": list(command.free), "reply_from": command.reply_from}
    return _pack(header, blobs)


def decode_command(data: bytes) -> Command:
    header, blobs = _unpack(data)
    kind, args, free = header.get("kind"), header.get("args"), header.get("free")
    reply_from = header.get("reply_from")
    if not isinstance(kind, str) or not isinstance(args, list) or not isinstance(free, list):
        raise ProtocolError("malformed disco command")
    if not all(type(i) is int for i in free) or not (reply_from is None or type(reply_from) is int):
        raise ProtocolError("malformed disco command")
    decoded = []
    for arg in args:
        if isinstance(arg, dict) and set(arg) == {"ref"} and type(arg["ref"]) is int:
            decoded.append(Ref(arg["ref"]))
        else:
            decoded.append(decode_value(arg, blobs))
    return Command(kind, tuple(decoded), tuple(free), reply_from)


def encode_answer(answer: tuple) -> bytes:
    if answer[0] == "ok":
        blobs: list[bytes] = []
        try:
            value = encode_value(answer[1], blobs)
        except UserError as error:
            return _pack({"status": "error", "message": str(error), "aborted": False}, [])
        return _pack({"status": "ok", "value": value}, blobs)
    return _pack({"status": "error", "message": answer[1], "aborted": bool(answer[2])}, [])


def decode_answer(data: bytes) -> tuple:
    header, blobs = _unpack(data)
    if header.get("status") == "ok":
        return ("ok", decode_value(header.get("value"), blobs))
    if header.get("status") == "error" and isinstance(header.get("message"), str):
        return ("error", header["message"], bool(header.get("aborted")))
    raise ProtocolError("malformed disco answer")
