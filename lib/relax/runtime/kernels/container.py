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
kernel metadata), and per target a native object and/or LLVM bitcode (CPU
targets) or a cubin and its PTX (cuda targets).

Format 0.2 adds cuda: targets of triple CUDA_TRIPLE (all or none of a file's),
the "ptx" section kind and KernelInfo.launches. Format 0.3 adds parts: a CPU
target's kernels compiled as several objects (on several threads,
codegen/object_parts.py), one object and one bitcode section per part, in part
order. Format 0.4 adds the manifest's "code" list: the SHA-256 of every code
section, which binds the kernels' metadata to their code (code_hashes.py). Format 0.5
adds, inside each CPU object, each kernel's signature digest next to its code
(kernel_signatures.py), which binds every kernel's code to its own metadata. A writer
writes 0.5 for every .ko; a reader reads 0.1 to 0.5, checks the code hashes of 0.4 and
0.5 files and the kernel signatures of 0.5 files.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import field

from ...diagnostics import UserError
from ...records import record
from ...version import FORMAT_VERSIONS
from . import code_hashes
from .abi import KERNEL_ABI_VERSION
from .elf_check import check_native_objects
from .metadata import KernelInfo

MAGIC = b"\x7fRLXKO\r\n"
HEADER = struct.Struct("<8sHHIQ32s")
SECTION = struct.Struct("<IIQQ")
PAYLOAD_ALIGNMENT = 16

SECTION_KINDS = {1: "manifest", 2: "object", 3: "bitcode", 4: "ptx"}
SECTION_CODES = {name: code for code, name in SECTION_KINDS.items()}

FORMAT_VERSION = tuple(int(part) for part in FORMAT_VERSIONS["ko"].split("."))
CPU_FORMAT_VERSION = (0, 1)  # a .ko without cuda targets, each in one part, as written before 0.4
CUDA_FORMAT_VERSION = (0, 2)  # a .ko of cuda targets, as written before 0.4
PARTS_FORMAT_VERSION = (0, 3)  # a CPU .ko with a target in several parts, as written before 0.4
CODE_HASHES_FORMAT_VERSION = (0, 4)  # 0.2 and 0.3 with code hashes, as written before 0.5
SIGNATURES_FORMAT_VERSION = (0, 5)  # what every .ko is written as: 0.4 with kernel signatures in the objects
READABLE_VERSIONS = (CPU_FORMAT_VERSION, CUDA_FORMAT_VERSION, PARTS_FORMAT_VERSION, CODE_HASHES_FORMAT_VERSION,
                     SIGNATURES_FORMAT_VERSION)
# those that may cut a target in parts, and those that may hold cuda targets
PARTS_VERSIONS = (PARTS_FORMAT_VERSION, CODE_HASHES_FORMAT_VERSION, SIGNATURES_FORMAT_VERSION)
CUDA_VERSIONS = (CUDA_FORMAT_VERSION, CODE_HASHES_FORMAT_VERSION, SIGNATURES_FORMAT_VERSION)

CUDA_TRIPLE = "nvptx64-nvidia-cuda"
ELF_MAGIC = b"\x7fELF"


@record
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


@record
class KernelObject:
    """The decoded contents of a .ko file."""

    targets: tuple[TargetEntry, ...]
    kernels: tuple[KernelInfo, ...]
    objects: dict  # target index -> native object bytes (a cubin for a cuda target); the first part's
    bitcode: dict  # target index -> LLVM bitcode bytes; the first part's
    ptx: dict = field(default_factory=dict)  # target index -> PTX text bytes (cuda targets)
    # target index -> ((native object, bitcode), ...): the parts after the first (format 0.3)
    parts: dict = field(default_factory=dict)
    signed: bool = False  # format 0.5: each CPU kernel's code stores its signature (kernel_signatures.py)

    def native_objects(self, index: int) -> tuple[bytes, ...]:
        """Every native object of target `index`, in part order (none when it has no native code)."""
        if index not in self.objects:
            return ()
        return (self.objects[index],) + tuple(native for native, _ in self.parts.get(index, ()))

    def bitcode_parts(self, index: int) -> tuple[bytes, ...]:
        """Every bitcode of target `index`, in part order (none when it has no bitcode)."""
        if index not in self.bitcode:
            return ()
        return (self.bitcode[index],) + tuple(code for _, code in self.parts.get(index, ()))

    @property
    def is_cuda(self) -> bool:
        return bool(self.targets) and all(t.triple == CUDA_TRIPLE for t in self.targets)

    def kernel(self, name: str) -> KernelInfo | None:
        for info in self.kernels:
            if info.name == name:
                return info
        return None


def _align(offset: int) -> int:
    return (offset + PAYLOAD_ALIGNMENT - 1) // PAYLOAD_ALIGNMENT * PAYLOAD_ALIGNMENT


def write(kernel_object: KernelObject) -> bytes:
    """The bytes of a .ko file; identical inputs give identical bytes."""
    code = []  # (kind, target, payload) in section order
    for index in range(len(kernel_object.targets)):
        for kind, payloads in (("object", kernel_object.objects), ("bitcode", kernel_object.bitcode),
                               ("ptx", kernel_object.ptx)):
            if index in payloads:
                code.append((kind, index, bytes(payloads[index])))
        for native, bitcode in kernel_object.parts.get(index, ()):
            code += [("object", index, bytes(native)), ("bitcode", index, bytes(bitcode))]
    manifest = {
        "format": "relax-kernel-object",
        "targets": [t.to_json() for t in kernel_object.targets],
        "kernels": [k.to_json() for k in sorted(kernel_object.kernels, key=lambda k: k.name)],
        code_hashes.KEY: code_hashes.describe(code),
    }
    sections = [(SECTION_CODES["manifest"], 0, json.dumps(manifest, sort_keys=True, indent=1).encode())]
    sections += [(SECTION_CODES[kind], target, payload) for kind, target, payload in code]
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
    major, minor = SIGNATURES_FORMAT_VERSION
    header = HEADER.pack(MAGIC, major, minor, len(sections), size, digest)
    return header + body


def _refuse(name: str, why: str) -> UserError:
    return UserError(f"'{name}' is not a valid kernel object: {why}")


def read(data: bytes, name: str = "<memory>") -> KernelObject:
    """Decodes and checks a whole .ko file; a foreign, corrupt or newer file is a UserError."""
    data = bytes(data)
    if len(data) < HEADER.size or data[:8] != MAGIC:
        raise _refuse(name, "bad magic number (not a .ko file)")
    magic, major, minor, count, size, digest = HEADER.unpack_from(data)
    if (major, minor) not in READABLE_VERSIONS:
        newer = (major, minor) > max(READABLE_VERSIONS)
        raise UserError(
            f"'{name}' is a kernel object of format version {major}.{minor}, "
            f"{'newer than' if newer else 'different from'} the supported "
            f"{' and '.join(f'{v[0]}.{v[1]}' for v in READABLE_VERSIONS)}"
        )
    if size != len(data):
        raise _refuse(name, f"size is {len(data)} bytes, the header says {size} (truncated or padded)")
    if hashlib.sha256(data[HEADER.size:]).digest() != digest:
        raise _refuse(name, "checksum mismatch (the file is corrupted)")
    if HEADER.size + SECTION.size * count > size:
        raise _refuse(name, "section table runs past the end of the file")
    manifest, found, code = None, {"object": {}, "bitcode": {}, "ptx": {}}, []
    for index in range(count):
        kind, target, offset, length = SECTION.unpack_from(data, HEADER.size + SECTION.size * index)
        if kind not in SECTION_KINDS or offset + length > size or offset < HEADER.size:
            raise _refuse(name, f"section {index} is malformed")
        payload = data[offset:offset + length]
        if SECTION_KINDS[kind] == "manifest":
            manifest = payload
        else:
            found[SECTION_KINDS[kind]].setdefault(target, []).append(payload)
            code.append((SECTION_KINDS[kind], target, payload))
    if manifest is None:
        raise _refuse(name, "no manifest section")
    try:
        document = json.loads(manifest.decode("utf-8"))
        targets = tuple(TargetEntry.from_json(t) for t in document["targets"])
        kernels = tuple(KernelInfo.from_json(k) for k in document["kernels"])
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise _refuse(name, f"unreadable manifest ({exc})") from None
    for index in [index for sections in found.values() for index in sections]:
        if index >= len(targets):
            raise _refuse(name, f"a section names target {index}, the manifest lists {len(targets)}")
    objects, bitcode, ptx, parts = _parts(found, name, (major, minor))
    signed = (major, minor) >= SIGNATURES_FORMAT_VERSION
    result = KernelObject(targets, kernels, objects, bitcode, ptx, parts, signed)
    _check_cuda(result, name, (major, minor))
    code_hashes.check(document, code, (major, minor) >= CODE_HASHES_FORMAT_VERSION, lambda why: _refuse(name, why))
    # before LLVM or the CUDA driver sees them (elf_check.py); 0.5: each kernel's signature too
    check_native_objects(result, name, signed)
    return result


def _parts(found: dict, name: str, version: tuple) -> tuple[dict, dict, dict, dict]:
    """objects, bitcode, ptx and parts from the payloads of each kind by target: one of each
    kind per target, or (format 0.3) as many objects as bitcode sections, the parts in order."""
    objects, bitcode, ptx, parts = {}, {}, {}, {}
    for kind, sections in found.items():
        for target, payloads in sections.items():
            if len(payloads) > 1 and (kind == "ptx" or version not in PARTS_VERSIONS):
                raise _refuse(name, f"target {target} has {len(payloads)} {kind} sections")
            {"object": objects, "bitcode": bitcode, "ptx": ptx}[kind][target] = payloads[0]
    for target in sorted(set(found["object"]) | set(found["bitcode"])):
        natives, codes = found["object"].get(target, []), found["bitcode"].get(target, [])
        if len(natives) > 1 or len(codes) > 1:
            if len(natives) != len(codes):
                raise _refuse(name, f"target {target} has {len(natives)} native objects and {len(codes)} bitcode "
                                    "sections (one of each per part)")
            parts[target] = tuple(zip(natives[1:], codes[1:]))
    return objects, bitcode, ptx, parts


def _check_cuda(kernel_object: KernelObject, name: str, version: tuple) -> None:
    """A cuda .ko is all cuda (format 0.2, 0.4 or 0.5): per target an ELF cubin and UTF-8 PTX, per kernel
    its launches; a CPU .ko has neither PTX nor launches."""
    cuda = [t.triple == CUDA_TRIPLE for t in kernel_object.targets]
    if not any(cuda):
        if kernel_object.ptx:
            raise _refuse(name, "a PTX section for a CPU target")
        for info in kernel_object.kernels:
            if info.launches:
                raise _refuse(name, f"CPU kernel '{info.name}' has GPU launches")
        return
    if not all(cuda):
        raise _refuse(name, "it mixes cuda and CPU targets")
    if version not in CUDA_VERSIONS:
        raise _refuse(name, f"cuda targets in a format {version[0]}.{version[1]} file")
    for index, target in enumerate(kernel_object.targets):
        cubin = kernel_object.objects.get(index)
        if cubin is None or cubin[:4] != ELF_MAGIC:
            raise _refuse(name, f"cuda target {index} ({target.cpu}) has no cubin (ELF) object")
        if index not in kernel_object.ptx:
            raise _refuse(name, f"cuda target {index} ({target.cpu}) has no PTX")
        try:
            kernel_object.ptx[index].decode("utf-8")
        except UnicodeDecodeError:
            raise _refuse(name, f"the PTX of cuda target {index} is not UTF-8 text") from None
    for info in kernel_object.kernels:
        if not info.launches:
            raise _refuse(name, f"cuda kernel '{info.name}' has no launches")
