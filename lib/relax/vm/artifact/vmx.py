"""The .vmx linked artifact: one file holding a .vmo and its kernel objects, checked whole.

Layout (little-endian; docs/file-format-vmx.md is the prose version):

    offset  size  field
    0       8     magic b"\\x7fRLXVX\\r\\n"
    8       2     format major version     } relax.version.FORMAT_VERSIONS["vmx"]
    10      2     format minor version     }
    12      4     number of sections N
    16      8     total file size in bytes
    24      32    SHA-256 of bytes [56, file size)
    56      24*N  section table: kind u32, index u32, offset u64, size u64
    ...           payloads, each starting on a 16-byte boundary, zero padding

Sections (SECTION_KINDS): one manifest (UTF-8 JSON, keys sorted: producer, link
flags, inputs with their SHA-256, targets, symbol resolutions), one bytecode
section (the .vmo bytes, unchanged) and one kernel-object section per linked .ko
(its bytes, unchanged; `index` is its position on the link line).

`read` checks everything before anything is used: the header, the checksum, the
section table, the manifest, that each embedded input still has the hash the
manifest records, and the embedded .vmo and .ko files with their own readers.
Importing this module registers the .vmx loader with relax.vm.load and the .vmx
exporter with Executable.export.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass

from ...version import FORMAT_VERSIONS, __version__
from ..bytecode.binary import FormatError
from ..bytecode.executable import EXEC_MODES

MAGIC = b"\x7fRLXVX\r\n"
HEADER = struct.Struct("<8sHHIQ32s")
SECTION = struct.Struct("<IIQQ")
PAYLOAD_ALIGNMENT = 16
FORMAT_VERSION = tuple(int(part) for part in FORMAT_VERSIONS["vmx"].split("."))
FORMAT_NAME = "relax-linked-artifact"
PRODUCER = f"relax {__version__}"

SECTION_KINDS = {1: "manifest", 2: "bytecode", 3: "kernel object"}
SECTION_CODES = {name: code for code, name in SECTION_KINDS.items()}

# How a symbol the bytecode calls was resolved, as the manifest spells it.
RESOLUTIONS = ("kernel", "runtime", "undefined")

# The manifest's entries: field -> type. Reading checks them all (extra fields are allowed).
FLAG_FIELDS = {"allow_undefined": list, "target_check": bool}
# The flag "exec_mode", one of EXEC_MODES, is the VM exec mode the artifact asks for
# (relaxld/relaxc --exec-mode); optional: absent, a VM runs as it is told (VirtualMachine's
# and relaxrun's own default, the interpreter).
INPUT_FIELDS = {"kind": str, "name": str, "size": int, "sha256": str}
TARGET_FIELDS = {"kernel_object": int, "triple": str, "cpu": str, "features": str, "abi_version": int}
SYMBOL_FIELDS = {"name": str, "resolution": str}


def _check_fields(entry, fields: dict, what: str) -> None:
    if not isinstance(entry, dict):
        raise ValueError(f"malformed {what} {entry!r}")
    for name, kind in fields.items():
        value = entry.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"malformed {what}: '{name}' is {value!r}")


@dataclass(frozen=True)
class LinkInfo:
    """The manifest of a .vmx: what was linked, how, for which targets."""

    producer: str
    flags: dict            # {"allow_undefined": [patterns], "target_check": bool[, "exec_mode": str]}
    inputs: tuple          # ({"kind": "vmo"|"ko", "name", "size", "sha256"}, ...) in link order
    targets: tuple         # ({"kernel_object": i, "triple", "cpu", "features", "abi_version", ...}, ...)
    symbols: tuple         # ({"name", "resolution", ["kernel_objects"]}, ...) sorted by name

    def to_json(self) -> dict:
        return {"format": FORMAT_NAME, "producer": self.producer, "flags": self.flags,
                "inputs": list(self.inputs), "targets": list(self.targets), "symbols": list(self.symbols)}

    @staticmethod
    def from_json(document) -> "LinkInfo":
        if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
            raise ValueError("not a linked-artifact manifest")
        info = LinkInfo(str(document["producer"]), document["flags"], tuple(document["inputs"]),
                        tuple(document["targets"]), tuple(document["symbols"]))
        _check_fields(info.flags, FLAG_FIELDS, "flags")
        if info.flags.get("exec_mode", EXEC_MODES[0]) not in EXEC_MODES:
            raise ValueError(f"malformed flags: 'exec_mode' is {info.flags['exec_mode']!r}")
        for entry in info.inputs:
            _check_fields(entry, INPUT_FIELDS, "input entry")
            if entry["kind"] not in ("vmo", "ko"):
                raise ValueError(f"malformed input entry: kind {entry['kind']!r}")
        for target in info.targets:
            _check_fields(target, TARGET_FIELDS, "target entry")
        for symbol in info.symbols:
            _check_fields(symbol, SYMBOL_FIELDS, "symbol entry")
            if symbol["resolution"] not in RESOLUTIONS:
                raise ValueError(f"malformed symbol entry: resolution {symbol['resolution']!r}")
        return info

    def symbols_resolved_as(self, resolution: str) -> list[str]:
        return [s["name"] for s in self.symbols if s["resolution"] == resolution]

    def describe(self) -> str:
        """The link metadata as `relaxas --dump stats` prints it after the executable's statistics."""
        lines = [f"Link metadata (.vmx format {FORMAT_VERSIONS['vmx']}, produced by {self.producer}):"]
        allowed = self.flags.get("allow_undefined", [])
        mode = f" exec_mode={self.flags['exec_mode']}" if "exec_mode" in self.flags else ""
        lines.append(f"  Flags: allow_undefined={json.dumps(allowed)} target_check={str(self.flags.get('target_check', False)).lower()}{mode}")
        lines.append(f"  Inputs (#{len(self.inputs)}):")
        for entry in self.inputs:
            lines.append(f"    {entry['kind']:<3} {entry['name'] or '-'}  {entry['size']} bytes  sha256:{entry['sha256']}")
        lines.append(f"  Targets (#{len(self.targets)}):")
        for target in self.targets:
            text = target["triple"] + (f" -mcpu={target['cpu']}" if target.get("cpu") else "")
            text += f" -mattr={target['features']}" if target.get("features") else ""
            extras = " ".join(f"{key}={target[key]}" for key in sorted(target)
                              if key not in ("triple", "cpu", "features", "kernel_object"))
            lines.append(f"    [{target['kernel_object']}] {text}  ({extras})")
        counts = {resolution: len(self.symbols_resolved_as(resolution)) for resolution in RESOLUTIONS}
        lines.append("  Symbols (#{}): {} kernel, {} runtime, {} undefined (bound at run time)".format(
            len(self.symbols), counts["kernel"], counts["runtime"], counts["undefined"]))
        for name in self.symbols_resolved_as("undefined"):
            lines.append(f"    undefined: {name}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Artifact:
    """The decoded sections of a .vmx: manifest, .vmo bytes, .ko bytes in link order."""

    info: LinkInfo
    bytecode: bytes
    kernel_objects: tuple[bytes, ...]


def _align(offset: int) -> int:
    return (offset + PAYLOAD_ALIGNMENT - 1) // PAYLOAD_ALIGNMENT * PAYLOAD_ALIGNMENT


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(artifact: Artifact) -> bytes:
    """The bytes of a .vmx; the same artifact always gives the same bytes."""
    manifest = json.dumps(artifact.info.to_json(), sort_keys=True, indent=1).encode("utf-8")
    sections = [(SECTION_CODES["manifest"], 0, manifest), (SECTION_CODES["bytecode"], 0, bytes(artifact.bytecode))]
    sections += [(SECTION_CODES["kernel object"], index, bytes(data))
                 for index, data in enumerate(artifact.kernel_objects)]
    table_end = HEADER.size + SECTION.size * len(sections)
    offset = _align(table_end)
    table, body = [], bytearray()
    for kind, index, data in sections:
        table.append(SECTION.pack(kind, index, offset, len(data)))
        body += b"\0" * (offset - table_end - len(body)) + data
        offset = _align(offset + len(data))
    body += b"\0" * (offset - table_end - len(body))
    tail = b"".join(table) + bytes(body)
    header = HEADER.pack(MAGIC, FORMAT_VERSION[0], FORMAT_VERSION[1], len(sections), HEADER.size + len(tail),
                         hashlib.sha256(tail).digest())
    return header + tail


def _refuse(source: str, why: str) -> FormatError:
    return FormatError(f"'{source}' is not a valid linked artifact (.vmx): {why}")


def _check_header(data: bytes, source: str) -> int:
    if len(data) < len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        raise _refuse(source, "bad magic number")
    if len(data) < HEADER.size:
        raise _refuse(source, f"truncated header ({len(data)} bytes)")
    _, major, minor, count, size, digest = HEADER.unpack_from(data)
    if (major, minor) != FORMAT_VERSION:
        newer = (major, minor) > FORMAT_VERSION
        raise FormatError(f"'{source}' is a .vmx of format version {major}.{minor}, "
                          f"{'newer than' if newer else 'different from'} the supported {FORMAT_VERSIONS['vmx']}; "
                          "relink it with this toolchain")
    if size != len(data):
        raise _refuse(source, f"its size is {len(data)} bytes, the header says {size} (truncated or padded)")
    if hashlib.sha256(data[HEADER.size:]).digest() != digest:
        raise _refuse(source, "checksum mismatch (the file is corrupted)")
    if HEADER.size + SECTION.size * count > size:
        raise _refuse(source, "the section table runs past the end of the file")
    return count


def _sections(data: bytes, count: int, source: str) -> tuple[bytes, bytes, list[bytes]]:
    manifest, bytecode, kernels = [], [], {}
    end_of_table = HEADER.size + SECTION.size * count
    previous_end = end_of_table
    for number in range(count):
        kind, index, offset, length = SECTION.unpack_from(data, HEADER.size + SECTION.size * number)
        if kind not in SECTION_KINDS:
            raise _refuse(source, f"section {number} has unknown kind {kind}")
        if offset < previous_end or offset % PAYLOAD_ALIGNMENT or offset + length > len(data):
            raise _refuse(source, f"section {number} lies outside the file or overlaps another")
        previous_end = offset + length
        payload = data[offset:offset + length]
        name = SECTION_KINDS[kind]
        if name == "kernel object":
            if index in kernels:
                raise _refuse(source, f"kernel object {index} appears twice")
            kernels[index] = payload
        elif index != 0:
            raise _refuse(source, f"the {name} section has index {index}, not 0")
        else:
            (manifest if name == "manifest" else bytecode).append(payload)
    if len(manifest) != 1 or len(bytecode) != 1:
        raise _refuse(source, f"it needs one manifest and one bytecode section, has {len(manifest)} and {len(bytecode)}")
    if sorted(kernels) != list(range(len(kernels))):
        raise _refuse(source, "kernel objects are not numbered 0..N-1")
    return manifest[0], bytecode[0], [kernels[index] for index in range(len(kernels))]


def _check_inputs(info: LinkInfo, bytecode: bytes, kernels: list[bytes], source: str) -> None:
    expected = [("vmo", bytecode)] + [("ko", data) for data in kernels]
    if [entry["kind"] for entry in info.inputs] != [kind for kind, _ in expected]:
        raise _refuse(source, "the manifest's inputs do not match the embedded sections")
    for entry, (kind, data) in zip(info.inputs, expected):
        if entry["size"] != len(data) or entry["sha256"] != sha256_hex(data):
            raise _refuse(source, f"the embedded {kind} '{entry['name']}' does not match its recorded hash")
    for target in info.targets:
        if not 0 <= target["kernel_object"] < len(kernels):
            raise _refuse(source, f"a target names kernel object {target['kernel_object']}, there are {len(kernels)}")


def read(data: bytes, source: str = "<bytes>") -> Artifact:
    """Decodes and checks the container of a .vmx (load_export checks the embedded .vmo and .ko files)."""
    data = bytes(data)
    count = _check_header(data, source)
    manifest, bytecode, kernels = _sections(data, count, source)
    try:
        info = LinkInfo.from_json(json.loads(manifest.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise _refuse(source, f"unreadable manifest ({exc})") from None
    _check_inputs(info, bytecode, kernels, source)
    return Artifact(info, bytecode, tuple(kernels))


def is_vmx(data: bytes) -> bool:
    return bytes(data[:len(MAGIC)]) == MAGIC


def _load(data: bytes, source: str):
    from .load_export import load_artifact

    return load_artifact(data, source)


def _export(exe, path: str) -> None:
    from .load_export import export_artifact

    export_artifact(exe, path)


def _register() -> None:
    from ..bytecode.executable import EXPORTERS
    from ..bytecode.loader import register_loader

    register_loader(MAGIC, _load)
    EXPORTERS[".vmx"] = _export


_register()

__all__ = ["Artifact", "LinkInfo", "MAGIC", "is_vmx", "read", "sha256_hex", "write"]
