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
(its bytes, unchanged; `index` is its position on the link line). A signed artifact
(format 0.2) has one more, last, at the very end of the file: the signature
(signing.py). An unsigned one is written as format 0.1, byte for byte as before
signatures existed.

`read` checks everything before anything is used: the header, the checksum, the
section table, the signature when trusted keys are given, the manifest, that each
embedded input still has the hash the manifest records, and the embedded .vmo and .ko
files with their own readers.
Importing this module registers the .vmx loader with relax.vm.load and the .vmx
exporter with Executable.export.
"""

from __future__ import annotations

import hashlib
import json
import struct

from ...records import record
from ...version import FORMAT_VERSIONS, __version__
from ..bytecode.binary import FormatError
from ..bytecode.executable import EXEC_MODES
from . import signing

MAGIC = b"\x7fRLXVX\r\n"
HEADER = struct.Struct("<8sHHIQ32s")
CHECKSUM_AT = 24  # the header's SHA-256 field: [24, 56)
SECTION = struct.Struct("<IIQQ")
PAYLOAD_ALIGNMENT = 16
FORMAT_VERSION = tuple(int(part) for part in FORMAT_VERSIONS["vmx"].split("."))  # what a signed file is
UNSIGNED_VERSION = (0, 1)  # unsigned files keep the version (and bytes) they had before signatures
FORMAT_NAME = "relax-linked-artifact"
PRODUCER = f"relax {__version__}"

SECTION_KINDS = {1: "manifest", 2: "bytecode", 3: "kernel object", 4: "signature"}
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


@record
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

    def describe(self, signature: signing.Signature | None = None) -> str:
        """The link metadata as `relaxas --dump stats` prints it after the executable's statistics,
        with the signer (`signature` of the file, or None: unsigned)."""
        version = ".".join(map(str, FORMAT_VERSION if signature is not None else UNSIGNED_VERSION))
        lines = [f"Link metadata (.vmx format {version}, produced by {self.producer}):"]
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
        lines.append(f"  Signer: {signature.describe() if signature is not None else 'unsigned'}")
        return "\n".join(lines) + "\n"


@record
class Artifact:
    """The decoded sections of a .vmx: manifest, .vmo bytes, .ko bytes in link order."""

    info: LinkInfo
    bytecode: bytes
    kernel_objects: tuple[bytes, ...]
    signature: signing.Signature | None = None  # of a signed file as read; write() signs anew


def _align(offset: int) -> int:
    return (offset + PAYLOAD_ALIGNMENT - 1) // PAYLOAD_ALIGNMENT * PAYLOAD_ALIGNMENT


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(artifact: Artifact, key: signing.SigningKey | None = None) -> bytes:
    """The bytes of a .vmx, signed with `key` when one is given (format 0.2; unsigned: 0.1).
    The same artifact and key always give the same bytes."""
    manifest = json.dumps(artifact.info.to_json(), sort_keys=True, indent=1).encode("utf-8")
    sections = [(SECTION_CODES["manifest"], 0, manifest), (SECTION_CODES["bytecode"], 0, artifact.bytecode)]
    sections += [(SECTION_CODES["kernel object"], index, data) for index, data in enumerate(artifact.kernel_objects)]
    if key is not None:  # last, so that it ends the file (its size is a multiple of the alignment)
        sections.append((SECTION_CODES["signature"], 0, key.public_key + bytes(signing.SIGNATURE_SIZE)))
    # The file is the header, then `parts` (the section table, each payload after its padding),
    # joined once at the end: a payload (weights) is copied once, into the file.
    table_end = HEADER.size + SECTION.size * len(sections)
    table, parts, position = [], [], table_end
    for kind, index, data in sections:
        offset = _align(position)
        table.append(SECTION.pack(kind, index, offset, len(data)))
        parts += [bytes(offset - position), memoryview(data).cast("B")]
        position = offset + len(data)
    parts.append(bytes(_align(position) - position))
    parts.insert(0, b"".join(table))
    version = FORMAT_VERSION if key is not None else UNSIGNED_VERSION
    prefix = HEADER.pack(MAGIC, version[0], version[1], len(sections), _align(position), b"")[:CHECKSUM_AT]
    if key is not None:
        parts[-2] = _signed_last(prefix, parts, key)
    checksum = hashlib.sha256()
    for part in parts:
        checksum.update(part)
    return b"".join([prefix, checksum.digest()] + parts)


def _signed_last(prefix: bytes, parts: list, key: signing.SigningKey) -> bytes:
    """The signature section's payload, signed: `parts` ends with it (the public key and a
    zeroed signature) and an empty padding; the signature covers every byte before its own."""
    *before, last, padding = parts
    assert not len(padding)
    public_key = bytes(last[:-signing.SIGNATURE_SIZE])
    return public_key + key.sign(signing.signed_message(prefix, *before, public_key))


def sign(data: bytes, key: signing.SigningKey, source: str = "<bytes>") -> bytes:
    """The .vmx `data` signed with `key` (a signature it had is replaced)."""
    return write(read(data, source), key)


def _refuse(source: str, why: str) -> FormatError:
    return FormatError(f"'{source}' is not a valid linked artifact (.vmx): {why}")


def _check_header(data: bytes, source: str) -> tuple[int, tuple[int, int]]:
    if len(data) < len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        raise _refuse(source, "bad magic number")
    if len(data) < HEADER.size:
        raise _refuse(source, f"truncated header ({len(data)} bytes)")
    _, major, minor, count, size, digest = HEADER.unpack_from(data)
    if (major, minor) not in (UNSIGNED_VERSION, FORMAT_VERSION):
        newer = (major, minor) > FORMAT_VERSION
        raise FormatError(f"'{source}' is a .vmx of format version {major}.{minor}, "
                          f"{'newer than' if newer else 'different from'} the supported {FORMAT_VERSIONS['vmx']}; "
                          "relink it with this toolchain")
    if size != len(data):
        raise _refuse(source, f"its size is {len(data)} bytes, the header says {size} (truncated or padded)")
    if hashlib.sha256(memoryview(data)[HEADER.size:]).digest() != digest:  # not a copy of the file
        raise _refuse(source, "checksum mismatch (the file is corrupted)")
    if HEADER.size + SECTION.size * count > size:
        raise _refuse(source, "the section table runs past the end of the file")
    return count, (major, minor)


def _section_table(data: bytes, count: int, signed: bool, source: str) -> dict[str, dict[int, bytes]]:
    """Section name -> {index -> payload}; kinds, bounds, order and overlaps checked."""
    found: dict[str, dict[int, bytes]] = {name: {} for name in SECTION_KINDS.values()}
    previous_end = HEADER.size + SECTION.size * count
    for number in range(count):
        kind, index, offset, length = SECTION.unpack_from(data, HEADER.size + SECTION.size * number)
        name = SECTION_KINDS.get(kind)
        if name is None or (name == "signature" and not signed):
            raise _refuse(source, f"section {number} has unknown kind {kind}")
        if offset < previous_end or offset % PAYLOAD_ALIGNMENT or offset + length > len(data):
            raise _refuse(source, f"section {number} lies outside the file or overlaps another")
        if name == "signature" and (number != count - 1 or offset + length != len(data)
                                    or length != signing.PAYLOAD_SIZE):
            raise _refuse(source, f"the signature (section {number}) is not the last {signing.PAYLOAD_SIZE} "
                                  "bytes of the file")
        previous_end = offset + length
        if index in found[name]:
            raise _refuse(source, f"{name} {index} appears twice")
        found[name][index] = data[offset:offset + length]
    return found


def _sections(data: bytes, count: int, signed: bool, source: str):
    """The manifest, bytecode and kernel-object payloads, and the signature (or None)."""
    found = _section_table(data, count, signed, source)
    for name in ("manifest", "bytecode", "signature"):
        if any(index != 0 for index in found[name]):
            raise _refuse(source, f"the {name} section has index {max(found[name])}, not 0")
    if len(found["manifest"]) != 1 or len(found["bytecode"]) != 1:
        raise _refuse(source, f"it needs one manifest and one bytecode section, has {len(found['manifest'])} "
                              f"and {len(found['bytecode'])}")
    kernels = found["kernel object"]
    if sorted(kernels) != list(range(len(kernels))):
        raise _refuse(source, "kernel objects are not numbered 0..N-1")
    signature = None
    if signed:
        if not found["signature"]:
            raise _refuse(source, "a format 0.2 artifact ends with a signature section; this one has none")
        payload = found["signature"][0]
        with memoryview(data) as view:
            message = signing.signed_message(data[:CHECKSUM_AT], view[HEADER.size:len(data) - signing.SIGNATURE_SIZE])
        signature = signing.Signature(payload[:signing.PUBLIC_KEY_SIZE], payload[signing.PUBLIC_KEY_SIZE:], message)
    return found["manifest"][0], found["bytecode"][0], [kernels[i] for i in range(len(kernels))], signature


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


def check_targets(info: LinkInfo, kernel_objects: list, source: str) -> None:
    """Each target the manifest records is one of its kernel object's (decoded), as the linker
    records them: a triple or kernel ABI version changed in the manifest alone would describe
    kernels that are not there (each .ko's own ABI check reads the .ko)."""
    for index, entry in enumerate(info.targets):
        recorded = {field: entry[field] for field in TARGET_FIELDS if field != "kernel_object"}
        targets = kernel_objects[entry["kernel_object"]].targets  # an index in range: _check_inputs
        if not any(recorded == {field: getattr(target, field) for field in recorded} for target in targets):
            have = ", ".join(f"{target.triple} with kernel ABI version {target.abi_version}" for target in targets)
            raise _refuse(source, f"the manifest's target {index} ({str(entry['triple'])[:60]}, kernel ABI version "
                                  f"{entry['abi_version']}) is not one of kernel object {entry['kernel_object']}'s "
                                  f"({have or 'none'})")


def read(data: bytes, source: str = "<bytes>", trust: signing.TrustedKeys | None = None) -> Artifact:
    """Decodes and checks the container of a .vmx (load_export checks the embedded .vmo and .ko files).

    With `trust`, an artifact that a trusted key did not sign, exactly as it is, is refused
    right after the section table is read: before its manifest, bytecode or kernels are."""
    data = bytes(data)
    count, version = _check_header(data, source)
    manifest, bytecode, kernels, signature = _sections(data, count, version != UNSIGNED_VERSION, source)
    if trust is not None:
        trust.check(signature, source)
    try:
        info = LinkInfo.from_json(json.loads(manifest.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise _refuse(source, f"unreadable manifest ({exc})") from None
    _check_inputs(info, bytecode, kernels, source)
    return Artifact(info, bytecode, tuple(kernels), signature)


def is_vmx(data: bytes) -> bool:
    return bytes(data[:len(MAGIC)]) == MAGIC


def _load(data: bytes, source: str, trust=None):
    from .load_export import load_artifact

    return load_artifact(data, source, trust=trust)


def _export(exe, path: str) -> None:
    from .load_export import export_artifact

    export_artifact(exe, path)


def _register() -> None:
    from ..bytecode.executable import EXPORTERS
    from ..bytecode.loader import register_loader

    register_loader(MAGIC, _load, signed=True)
    EXPORTERS[".vmx"] = _export


_register()

__all__ = ["Artifact", "LinkInfo", "MAGIC", "is_vmx", "read", "sha256_hex", "sign", "write"]
