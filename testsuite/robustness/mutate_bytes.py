"""Byte-level mutators, and the three binary formats' checksums recomputed.

The mutators take (bytes, rng) and return bytes; BYTE_MUTATORS is the table the
artifact mutators draw from. The seals recompute what each format checks first, so
that a mutation gets past the checksum and reaches the structural checks under it:

    .vmx, .ko  header: magic 8, major 2, minor 2, section count 4, file size 8,
               SHA-256 of bytes [56, size) 32; then the section table, 24 bytes an
               entry (kind u32, index u32, offset u64, size u64), payloads 16-aligned
               (lib/relax/vm/artifact/vmx.py, lib/relax/runtime/kernels/container.py)
    .vmo       CRC-32 of every byte before the last four (lib/relax/vm/bytecode/vmo.py)
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass, field

HEADER = struct.Struct("<8sHHIQ32s")
SECTION = struct.Struct("<IIQQ")
ALIGNMENT = 16
SIZE_AT, DIGEST_AT = 16, 24
VMX_MAGIC = b"\x7fRLXVX\r\n"

# Values that sit on the edges of counts, sizes and offsets.
INTERESTING = (0, 1, 2, 7, 8, 15, 16, 17, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 1 << 20, (1 << 31) - 1,
               1 << 31, (1 << 32) - 1, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)
WIDTHS = {1: "<B", 2: "<H", 4: "<I", 8: "<Q"}


def interesting_value(rng, data_length: int = 0, bits: int = 64) -> int:
    choices = INTERESTING + (data_length - 1, data_length, data_length + 1, data_length * 2)
    return rng.choice(choices) % (1 << bits)


# ---- the mutators ---------------------------------------------------------------------------

def flip_bits(data: bytes, rng) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        position = rng.randrange(len(out))
        out[position] ^= 1 << rng.randrange(8)
    return bytes(out)


def truncate(data: bytes, rng) -> bytes:
    if not data:
        return data
    cut = rng.choice((0, 1, 4, 8, 16, 56, rng.randrange(len(data)), len(data) // 2, len(data) - 1, len(data) - 4))
    return data[:max(0, min(cut, len(data) - 1))]


def extend(data: bytes, rng) -> bytes:
    tail = rng.choice((b"\0", b"\0" * 16, b"\xff" * 8, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))))
    return data + tail


def write_integer(data: bytes, rng) -> bytes:
    """An edge value written over 1, 2, 4 or 8 bytes at a random offset."""
    width = rng.choice((1, 2, 4, 8, 8))
    if len(data) < width:
        return data
    position = rng.randrange(len(data) - width + 1)
    if rng.random() < 0.5:
        position -= position % width
    value = interesting_value(rng, len(data), 8 * width)
    return data[:position] + struct.pack(WIDTHS[width], value) + data[position + width:]


def delete_chunk(data: bytes, rng) -> bytes:
    if len(data) < 2:
        return data
    start = rng.randrange(len(data))
    return data[:start] + data[start + rng.choice((1, 4, 8, 16, 64)):]


def duplicate_chunk(data: bytes, rng) -> bytes:
    if not data:
        return data
    start = rng.randrange(len(data))
    chunk = data[start:start + rng.choice((1, 4, 8, 16, 64))]
    return data[:start] + chunk + data[start:]


def zero_range(data: bytes, rng) -> bytes:
    if not data:
        return data
    start = rng.randrange(len(data))
    length = min(len(data) - start, rng.choice((4, 16, 64, 256)))
    return data[:start] + b"\0" * length + data[start + length:]


BYTE_MUTATORS = {
    "flip-bits": flip_bits,
    "truncate": truncate,
    "extend": extend,
    "write-integer": write_integer,
    "delete-chunk": delete_chunk,
    "duplicate-chunk": duplicate_chunk,
    "zero-range": zero_range,
}


# ---- the seals ------------------------------------------------------------------------------

def reseal_container(data: bytes) -> bytes:
    """A .vmx or .ko with its size field and SHA-256 recomputed for what it now holds."""
    if len(data) < HEADER.size:
        return data
    out = bytearray(data)
    struct.pack_into("<Q", out, SIZE_AT, len(out))
    out[DIGEST_AT:DIGEST_AT + 32] = hashlib.sha256(bytes(out[HEADER.size:])).digest()
    return bytes(out)


def reseal_vmo(data: bytes) -> bytes:
    """A .vmo with its trailing CRC-32 recomputed."""
    if len(data) < 4:
        return data
    return data[:-4] + zlib.crc32(data[:-4]).to_bytes(4, "little")


def reseal(data: bytes, kind: str) -> bytes:
    return reseal_vmo(data) if kind == "vmo" else reseal_container(data)


# ---- the .vmx / .ko container, taken apart and put back --------------------------------------

@dataclass
class Container:
    """A well-formed .vmx or .ko as its header fields and sections [kind, index, payload]."""

    magic: bytes
    major: int
    minor: int
    sections: list = field(default_factory=list)

    @staticmethod
    def parse(data: bytes) -> "Container":
        magic, major, minor, count, _, _ = HEADER.unpack_from(data)
        sections = []
        for number in range(count):
            kind, index, offset, size = SECTION.unpack_from(data, HEADER.size + SECTION.size * number)
            sections.append([kind, index, data[offset:offset + size]])
        return Container(magic, major, minor, sections)

    def build(self) -> bytes:
        """The bytes as the toolchain's writers lay them out, sealed."""
        table_end = HEADER.size + SECTION.size * len(self.sections)
        offset = _align(table_end)
        table, body = [], bytearray()
        for kind, index, payload in self.sections:
            table.append(SECTION.pack(kind, index, offset, len(payload)))
            body += b"\0" * (offset - table_end - len(body)) + payload
            offset = _align(offset + len(payload))
        if self.magic == VMX_MAGIC:  # a .vmx pads its last payload too, a .ko does not
            body += b"\0" * (offset - table_end - len(body))
        header = HEADER.pack(self.magic, self.major, self.minor, len(self.sections), 0, b"\0" * 32)
        return reseal_container(header + b"".join(table) + bytes(body))


def _align(offset: int) -> int:
    return (offset + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def vmo_sections(data: bytes) -> tuple[bytes, list[bytes]]:
    """A well-formed .vmo as its header (magic, version) and its four section payloads."""
    position = 8 + 8 + int.from_bytes(data[8:16], "little")
    header, payloads = data[:position], []
    for _ in range(4):
        size = int.from_bytes(data[position:position + 8], "little")
        payloads.append(data[position + 8:position + 8 + size])
        position += 8 + size
    return header, payloads


def build_vmo(header: bytes, payloads: list[bytes]) -> bytes:
    body = header + b"".join(len(p).to_bytes(8, "little") + p for p in payloads)
    return reseal_vmo(body + b"\0\0\0\0")
