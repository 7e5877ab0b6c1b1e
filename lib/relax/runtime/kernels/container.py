"""The .ko kernel object container: read, check whole, write. No pickle, no code.

Layout (little-endian; docs/file-format-ko.md is the prose version):

    offset  size  field
    0       8     magic b"\\x7fRLXKO\\r\\n"
    8       2     format major version     } relax.version.FORMAT_VERSIONS["ko"]
    10      2     format minor version     }
    12      4     number of sections
    16      8     total file size in bytes
    24      32    SHA-256 of bytes [56, file size)
    56      24*N  section table: kind u32, target index u32, offset u64, size u64
    ...           section payloads, each starting on a 16-byte boundary, zero padding

Section kinds are SECTION_KINDS: exactly one manifest (UTF-8 JSON: targets and
kernel metadata), and per target a native object and/or LLVM bitcode.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass

from ...diagnostics import UserError
from ...version import FORMAT_VERSIONS
from .abi import KERNEL_ABI_VERSION
from .metadata import KernelInfo

MAGIC = b"\x7fRLXKO\r\n"
HEADER = struct.Struct("<8sHHIQ32s")
SECTION = struct.Struct("<IIQQ")
PAYLOAD_ALIGNMENT = 16

SECTION_KINDS = {1: "manifest", 2: "object", 3: "bitcode"}
SECTION_CODES = {name: code for code, name in SECTION_KINDS.items()}

FORMAT_VERSION = tuple(int(part) for part in FORMAT_VERSIONS["ko"].split("."))


@dataclass(frozen=True)
class TargetEntry:
    """One target of a (possibly fat) kernel object."""

    triple: str
    cpu: str
    features: str
    abi_version: int = KERNEL_ABI_VERSION
    object_format: str = "elf"

    def describe(self) -> str:
        text = self.triple
        if self.cpu:
            text += f" -mcpu={self.cpu}"
        if self.features:
            text += f" -mattr={self.features}"
        return text

    def to_json(self) -> dict:
        return {"triple": self.triple, "cpu": self.cpu, "features": self.features,
                "abi_version": self.abi_version, "object_format": self.object_format}

    @staticmethod
    def from_json(data: dict) -> "TargetEntry":
        try:
            return TargetEntry(str(data["triple"]), str(data["cpu"]), str(data["features"]),
                               int(data["abi_version"]), str(data.get("object_format", "elf")))
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"kernel object: malformed target entry: {exc}") from None


@dataclass(frozen=True)
class KernelObject:
    """The decoded contents of a .ko file."""

    targets: tuple[TargetEntry, ...]
    kernels: tuple[KernelInfo, ...]
    objects: dict  # target index -> native object bytes
    bitcode: dict  # target index -> LLVM bitcode bytes

    def kernel(self, name: str) -> KernelInfo | None:
        for info in self.kernels:
            if info.name == name:
                return info
        return None


def _align(offset: int) -> int:
    return (offset + PAYLOAD_ALIGNMENT - 1) // PAYLOAD_ALIGNMENT * PAYLOAD_ALIGNMENT


def write(kernel_object: KernelObject) -> bytes:
    """The bytes of a .ko file; identical inputs give identical bytes."""
    manifest = {
        "format": "relax-kernel-object",
        "targets": [t.to_json() for t in kernel_object.targets],
        "kernels": [k.to_json() for k in sorted(kernel_object.kernels, key=lambda k: k.name)],
    }
    sections = [(SECTION_CODES["manifest"], 0, json.dumps(manifest, sort_keys=True, indent=1).encode())]
    for index in range(len(kernel_object.targets)):
        if index in kernel_object.objects:
            sections.append((SECTION_CODES["object"], index, bytes(kernel_object.objects[index])))
        if index in kernel_object.bitcode:
            sections.append((SECTION_CODES["bitcode"], index, bytes(kernel_object.bitcode[index])))
    offset = _align(HEADER.size + SECTION.size * len(sections))
    table, payload = [], bytearray()
    for kind, target, data in sections:
        table.append(SECTION.pack(kind, target, offset, len(data)))
        start = offset - HEADER.size - SECTION.size * len(sections)
        payload += b"\0" * (start - len(payload)) + data
        offset = _align(offset + len(data))
    # `payload` starts right after the table and already holds the padding to the first
    # aligned offset (with an even number of sections the table does not end aligned).
    body = b"".join(table) + bytes(payload)
    size = HEADER.size + len(body)
    digest = hashlib.sha256(body).digest()
    header = HEADER.pack(MAGIC, FORMAT_VERSION[0], FORMAT_VERSION[1], len(sections), size, digest)
    return header + body


def _refuse(name: str, why: str) -> UserError:
    return UserError(f"'{name}' is not a valid kernel object: {why}")


def read(data: bytes, name: str = "<memory>") -> KernelObject:
    """Decodes and checks a whole .ko file; a foreign, corrupt or newer file is a UserError."""
    data = bytes(data)
    if len(data) < HEADER.size or data[:8] != MAGIC:
        raise _refuse(name, "bad magic number (not a .ko file)")
    magic, major, minor, count, size, digest = HEADER.unpack_from(data)
    if (major, minor) != FORMAT_VERSION:
        newer = (major, minor) > FORMAT_VERSION
        raise UserError(
            f"'{name}' is a kernel object of format version {major}.{minor}, "
            f"{'newer than' if newer else 'different from'} the supported {FORMAT_VERSIONS['ko']}"
        )
    if size != len(data):
        raise _refuse(name, f"size is {len(data)} bytes, the header says {size} (truncated or padded)")
    if hashlib.sha256(data[HEADER.size:]).digest() != digest:
        raise _refuse(name, "checksum mismatch (the file is corrupted)")
    if HEADER.size + SECTION.size * count > size:
        raise _refuse(name, "section table runs past the end of the file")
    manifest, objects, bitcode = None, {}, {}
    for index in range(count):
        kind, target, offset, length = SECTION.unpack_from(data, HEADER.size + SECTION.size * index)
        if kind not in SECTION_KINDS or offset + length > size or offset < HEADER.size:
            raise _refuse(name, f"section {index} is malformed")
        payload = data[offset:offset + length]
        if SECTION_KINDS[kind] == "manifest":
            manifest = payload
        else:
            (objects if SECTION_KINDS[kind] == "object" else bitcode)[target] = payload
    if manifest is None:
        raise _refuse(name, "no manifest section")
    try:
        document = json.loads(manifest.decode("utf-8"))
        targets = tuple(TargetEntry.from_json(t) for t in document["targets"])
        kernels = tuple(KernelInfo.from_json(k) for k in document["kernels"])
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise _refuse(name, f"unreadable manifest ({exc})") from None
    for index in list(objects) + list(bitcode):
        if index >= len(targets):
            raise _refuse(name, f"a section names target {index}, the manifest lists {len(targets)}")
    return KernelObject(targets, kernels, objects, bitcode)
