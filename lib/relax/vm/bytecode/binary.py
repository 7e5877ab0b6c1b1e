"""Little-endian readers and writers for the binary formats (.vmo, and .vmx sections).

The reader never trusts a length: each read checks that the bytes are there and
fails with a FormatError naming the section being read, so that a truncated or
corrupted file is refused with a message instead of a crash or a huge allocation.
"""

from __future__ import annotations

import struct
import zlib

from ...diagnostics import UserError

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")


class FormatError(UserError):
    """A file that is not a valid instance of its format."""


class Writer:
    """Little-endian values appended as parts, joined once by getvalue(). Large payloads (a
    weight's bytes) are kept by reference until then, so each is copied once, into the file."""

    def __init__(self) -> None:
        self._parts: list[bytes | memoryview] = []

    def u8(self, value: int) -> None:
        self._parts.append(_U8.pack(value))

    def u16(self, value: int) -> None:
        self._parts.append(_U16.pack(value))

    def u32(self, value: int) -> None:
        self._parts.append(_U32.pack(value))

    def i32(self, value: int) -> None:
        self._parts.append(_I32.pack(value))

    def u64(self, value: int) -> None:
        self._parts.append(_U64.pack(value))

    def i64(self, value: int) -> None:
        self._parts.append(_I64.pack(value))

    def f64(self, value: float) -> None:
        self._parts.append(_F64.pack(value))

    def raw(self, data) -> None:
        """Appends `data`: bytes, or a buffer that must not change before getvalue()."""
        self._parts.append(data if isinstance(data, bytes) else memoryview(data).cast("B"))

    def extend(self, other: "Writer") -> None:
        """Appends what `other` holds (without joining it)."""
        self._parts += other._parts

    def size(self) -> int:
        return sum(len(part) for part in self._parts)

    def crc32(self) -> int:
        """zlib's CRC-32 of getvalue(), without joining."""
        crc = 0
        for part in self._parts:
            crc = zlib.crc32(part, crc)
        return crc

    def string(self, text: str) -> None:
        data = text.encode("utf-8")
        self.u64(len(data))
        self.raw(data)

    def i64_array(self, values) -> None:
        self.u64(len(values))
        self._parts.append(struct.pack(f"<{len(values)}q", *values))

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


class Reader:
    def __init__(self, data: bytes, section: str = "header", start: int = 0, end: int | None = None):
        self.data = memoryview(data)
        self.pos = start
        self.end = len(data) if end is None else end
        self.section = section

    def fail(self, message: str) -> FormatError:
        return FormatError(f"{message} in the {self.section} section")

    def remaining(self) -> int:
        return self.end - self.pos

    def take(self, size: int) -> memoryview:
        if size < 0 or size > self.end - self.pos:
            raise self.fail("truncated data")
        view = self.data[self.pos:self.pos + size]
        self.pos += size
        return view

    def _unpack(self, packer: struct.Struct):
        return packer.unpack(self.take(packer.size))[0]

    def u8(self) -> int:
        return self._unpack(_U8)

    def u16(self) -> int:
        return self._unpack(_U16)

    def u32(self) -> int:
        return self._unpack(_U32)

    def i32(self) -> int:
        return self._unpack(_I32)

    def u64(self) -> int:
        return self._unpack(_U64)

    def i64(self) -> int:
        return self._unpack(_I64)

    def f64(self) -> float:
        return self._unpack(_F64)

    def count(self, item_size: int, what: str) -> int:
        """A u64 element count, refused when its items cannot fit in what is left."""
        count = self.u64()
        if count * max(item_size, 1) > self.remaining():
            raise self.fail(f"{what} count {count} exceeds the data left")
        return count

    def string(self, what: str = "string") -> str:
        size = self.count(1, what)
        try:
            return bytes(self.take(size)).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not valid UTF-8") from None

    def i64_array(self, what: str) -> list[int]:
        count = self.count(8, what)
        return list(struct.unpack(f"<{count}q", self.take(8 * count)))

    def expect_end(self) -> None:
        if self.pos != self.end:
            raise self.fail(f"{self.end - self.pos} unexpected trailing bytes")
