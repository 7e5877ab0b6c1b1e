"""Each kernel's code bound to its own signature, inside its object (.ko format 0.5).

The code hashes of the manifest (code_hashes.py) say that a code section is the one the
writer put there; whoever swaps one part's object for another's (another model's, or
another part of the same .ko) and recomputes the hashes gets past them, and a kernel of
the same symbol name whose buffers are not the ones the manifest describes writes past
them. So codegen emits, next to each kernel's entry, a constant

    @__relax_signature_<symbol> = constant [32 x i8] c"<SHA-256 of the canonical signature>"

and the reader, in pure Python before LLVM sees the object (elf_check.py), finds that
symbol in the part that defines the kernel's entry, reads its 32 bytes from the section
data and compares them with the SHA-256 of the manifest's KernelInfo. The canonical
signature is `canonical_signature` below, the one definition writer and reader share.

This binds the code to the metadata, not the metadata to a writer: whoever compiles
their own code for the metadata they want is stopped only by a signed artifact
(docs/signing.md). Cubins are not checked this way (docs/file-format-ko.md).
"""

from __future__ import annotations

import hashlib
import json

from .elf_machines import RELOCATION_WIDTHS, ObjectError

PREFIX = "__relax_signature_"
DIGEST_BYTES = 32

SHT_NOBITS, SHT_REL, SHT_RELA = 8, 9, 4
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHN_UNDEF, SHN_LORESERVE = 0, 0xFF00
MAX_RELOCATION_WIDTH = 8  # the widest field a relocation patches, where its type's width is unknown


def canonical_signature(info) -> bytes:
    """The canonical JSON of what a call to the kernel relies on (sorted keys, no spaces):
    its name and entry symbol, ABI version, parameters (kind, dtype, shape), the order of
    its symbolic sizes, its workspace, the buffers it writes, whether it assumes no
    aliasing, and its scalar result's dtype."""
    data = {
        "name": info.name,
        "symbol": info.symbol,
        "abi_version": info.abi_version,
        "params": [param.to_json() for param in info.params],
        "symbolic_vars": list(info.symbolic_vars),
        "workspace_bytes": info.workspace_bytes,
        "writes": list(info.writes),
        "noalias": info.noalias,
        "ret_dtype": info.ret_dtype,
    }
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def signature_digest(info) -> bytes:
    """The 32 bytes codegen stores under signature_symbol(info)."""
    return hashlib.sha256(canonical_signature(info)).digest()


def signature_symbol(info) -> str:
    return PREFIX + info.symbol


def _defined_symbols(elf) -> dict[str, tuple[int, int, int]]:
    """name -> (section, value, size) of every named symbol of `elf` defined in a section."""
    table = elf.sections[elf.symbol_table]
    strings = elf.sections[table.link]
    wide = elf.layout.bits == 64
    found = {}
    for fields in elf.entries(table, elf.layout.symbol):
        name, _, _, section, value, size = fields if wide else (fields[0], *fields[3:], *fields[1:3])
        if SHN_UNDEF < section < SHN_LORESERVE and name:
            found[elf.string(strings, name)] = (section, value, size)
    return found


def _relocated_ranges(elf, section_index: int) -> list[tuple[int, int]]:
    """[start, end) of every field a relocation patches in section `section_index`."""
    widths = RELOCATION_WIDTHS.get(elf.machine, {})
    mask = 0xFFFFFFFF if elf.layout.bits == 64 else 0xFF
    ranges = []
    for section in elf.sections:
        if section.kind not in (SHT_REL, SHT_RELA) or section.info != section_index:
            continue
        entry = elf.layout.rela if section.kind == SHT_RELA else elf.layout.rel
        for fields in elf.entries(section, entry):
            width = widths.get(fields[1] & mask, MAX_RELOCATION_WIDTH)
            ranges.append((fields[0], fields[0] + width))
    return ranges


def _stored_digest(elf, symbols: dict, info, relocated: dict) -> bytes | None:
    """The 32 bytes under the kernel's signature symbol; ObjectError when they are not
    constant bytes of the file that the loader would leave as they are. `relocated` caches
    _relocated_ranges by section (one pass over the relocations per section, not per kernel)."""
    where = signature_symbol(info)
    if where not in symbols:
        return None
    section_index, value, size = symbols[where]
    section = elf.sections[section_index]
    if size != DIGEST_BYTES or value + DIGEST_BYTES > section.size:
        raise ObjectError(f"the signature symbol '{where}' spans {size} bytes at {value} of a {section.size}-byte "
                          f"section, not {DIGEST_BYTES} bytes inside it")
    if section.kind == SHT_NOBITS or not section.flags & SHF_ALLOC or section.flags & (SHF_WRITE | SHF_EXECINSTR):
        raise ObjectError(f"the signature symbol '{where}' is not in a read-only data section")
    if section_index not in relocated:
        relocated[section_index] = _relocated_ranges(elf, section_index)
    for start, end in relocated[section_index]:
        if start < value + DIGEST_BYTES and value < end:
            raise ObjectError(f"a relocation patches the signature symbol '{where}'")
    start = section.offset + value
    return elf.data[start:start + DIGEST_BYTES]


def check_signatures(objects: list, kernels) -> None:
    """Raises ObjectError unless each kernel's entry is defined in a part (one of `objects`,
    the checked ElfObjects of one target) that stores the SHA-256 of the kernel's canonical
    signature under its signature symbol. The message names the part (from 1) of the kernel."""
    for part, elf in enumerate(objects, 1):
        if elf.symbol_table is None:
            continue
        symbols, relocated = None, {}
        defined = {function.name for function in elf.functions}
        for info in kernels:
            if info.symbol not in defined:
                continue
            symbols = _defined_symbols(elf) if symbols is None else symbols
            stored = _stored_digest(elf, symbols, info, relocated)
            if stored != signature_digest(info):
                where = f"part {part} of {len(objects)}, " if len(objects) > 1 else ""
                raise ObjectError(f"{where}kernel '{info.name}': the object's code was built for another signature"
                                  + ("" if stored is not None else f" (it has no '{signature_symbol(info)}')"))
