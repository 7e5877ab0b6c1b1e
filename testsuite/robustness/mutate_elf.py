"""ELF-aware mutators for the native objects inside a .ko (ELF64, little-endian).

Each mutator picks one field of one structure (the file header, a section header, a
symbol, a relocation, a string table) and writes an edge value into it, or cuts the
file at a structure's boundary: the places an ELF reader must check before it
trusts an offset, a size or an index. ELF_MUTATORS is the table; a mutator returns
None where the object lacks what it aims at, else (bytes, field, tampering).

`tampering` marks a mutation that changes what the code does while every structure
stays in bounds: a symbol's value or section moved within the object (an entry point
moved to the start of another function, or into padding), a relocation's type, symbol,
offset or addend changed within range (a call patched to go elsewhere), an allocated
section's bytes taken from elsewhere in the file, relocations applied to another
section. No structural check can tell such an object from a compiler's: the code bytes
and what patches them are judged only by the code hashes of the manifest and by the
signature (docs/signing.md). So the artifact mutator leaves the code hashes of a
tampered object stale (the case is refused by the hash check), rather than modelling
an attacker who rewrites the manifest too, which only signing stops; the other
mutations get the hashes recomputed, so that the structural checks are what must
refuse them (lib/relax/runtime/kernels/elf_check.py).
"""

from __future__ import annotations

import struct

from mutate_bytes import interesting_value

# (offset, width) of each field: the file header, a section header, a symbol, a RELA entry.
FILE_HEADER = {"ei_class": (4, 1), "ei_data": (5, 1), "ei_version": (6, 1), "e_type": (16, 2),
               "e_machine": (18, 2), "e_version": (20, 4), "e_phoff": (32, 8), "e_shoff": (40, 8),
               "e_flags": (48, 4), "e_ehsize": (52, 2), "e_phnum": (56, 2), "e_shentsize": (58, 2),
               "e_shnum": (60, 2), "e_shstrndx": (62, 2)}
SECTION_HEADER = {"sh_name": (0, 4), "sh_type": (4, 4), "sh_flags": (8, 8), "sh_addr": (16, 8), "sh_offset": (24, 8),
                  "sh_size": (32, 8), "sh_link": (40, 4), "sh_info": (44, 4), "sh_addralign": (48, 8),
                  "sh_entsize": (56, 8)}
SYMBOL = {"st_name": (0, 4), "st_info": (4, 1), "st_other": (5, 1), "st_shndx": (6, 2), "st_value": (8, 8),
          "st_size": (16, 8)}
RELOCATION = {"r_offset": (0, 8), "r_sym": (12, 4), "r_type": (8, 4), "r_addend": (16, 8)}
FORMATS = {1: "<B", 2: "<H", 4: "<I", 8: "<Q"}
SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_REL = 2, 3, 4, 9
SHF_ALLOC, STT_FUNC = 0x2, 2


def is_elf64(data: bytes) -> bool:
    return len(data) >= 64 and data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1


def _sections(data: bytes) -> list[dict]:
    """The section headers that lie within the file: their offset and decoded fields."""
    shoff, = struct.unpack_from("<Q", data, 40)
    count, = struct.unpack_from("<H", data, 60)
    found = []
    for number in range(count):
        at = shoff + 64 * number
        if at + 64 > len(data):
            break
        fields = {name: struct.unpack_from(FORMATS[width], data, at + offset)[0]
                  for name, (offset, width) in SECTION_HEADER.items()}
        found.append({"at": at, **fields})
    return found


def _write_field(data: bytes, at: int, field: tuple[int, int], value: int) -> bytes:
    offset, width = field
    value %= 1 << (8 * width)
    return data[:at + offset] + struct.pack(FORMATS[width], value) + data[at + offset + width:]


def _entries(data: bytes, kind: int, entry_size: int) -> list[int]:
    """The file offsets of every entry of every section of type `kind`."""
    spots = []
    for section in _sections(data):
        if section["sh_type"] == kind and section["sh_offset"] + section["sh_size"] <= len(data):
            spots += range(section["sh_offset"], section["sh_offset"] + section["sh_size"] - entry_size + 1, entry_size)
    return spots


def _edge(rng, data: bytes, count: int) -> int:
    """An edge value, or one near a count that an index must stay below."""
    return rng.choice((interesting_value(rng, len(data)), count, count + 1, count - 1))


def file_header(data: bytes, rng):
    name = rng.choice(sorted(FILE_HEADER))
    return _write_field(data, 0, FILE_HEADER[name], _edge(rng, data, len(_sections(data)))), name, False


def section_header(data: bytes, rng):
    sections = _sections(data)
    if not sections:
        return None
    name = rng.choice(sorted(SECTION_HEADER))
    section, value = rng.choice(sections), _edge(rng, data, len(sections))
    tampering = (name == "sh_offset" and section["sh_flags"] & SHF_ALLOC and value + section["sh_size"] <= len(data)
                 or name == "sh_info" and section["sh_type"] in (SHT_RELA, SHT_REL) and 0 < value < len(sections))
    return _write_field(data, section["at"], SECTION_HEADER[name], value), name, bool(tampering)


def symbol(data: bytes, rng):
    spots = _entries(data, SHT_SYMTAB, 24)
    if not spots:
        return None
    name, at = rng.choice(sorted(SYMBOL)), rng.choice(spots)
    sections = _sections(data)
    value = _edge(rng, data, len(sections))
    home, = struct.unpack_from("<H", data, at + 6)
    tampering = (name == "st_value" and 0 < home < len(sections) and value % (1 << 64) <= sections[home]["sh_size"]
                 or name == "st_shndx" and 0 < value % (1 << 16) < len(sections))
    return _write_field(data, at, SYMBOL[name], value), name, tampering


def relocation(data: bytes, rng):
    spots = _entries(data, SHT_RELA, 24)
    if not spots:
        return None
    name = rng.choice(sorted(RELOCATION))
    symbols = len(_entries(data, SHT_SYMTAB, 24))
    value = _edge(rng, data, symbols)
    signed = value % (1 << 64) - (1 << 64) if value % (1 << 64) >= 1 << 63 else value % (1 << 64)
    tampering = {"r_type": True, "r_sym": 0 <= value < symbols, "r_offset": 0 <= value < len(data),
                 "r_addend": abs(signed) <= len(data)}[name]
    return _write_field(data, rng.choice(spots), RELOCATION[name], value), name, tampering


def string_table(data: bytes, rng):
    """A string table whose terminating NUL bytes are gone (names run off the table)."""
    tables = [s for s in _sections(data) if s["sh_type"] == SHT_STRTAB and s["sh_offset"] + s["sh_size"] <= len(data)]
    if not tables:
        return None
    table = rng.choice(tables)
    start, end = table["sh_offset"], table["sh_offset"] + table["sh_size"]
    return data[:start] + data[start:end].replace(b"\0", b"A") + data[end:], "unterminated", False


def cut(data: bytes, rng):
    """The object cut at a structure's boundary: inside the header, before the section
    table, in the middle of a section."""
    sections = _sections(data)
    points = [16, 52, 64, struct.unpack_from("<Q", data, 40)[0], len(data) // 2]
    points += [s["sh_offset"] + s["sh_size"] // 2 for s in sections if s["sh_size"]]
    point = rng.choice(points)
    return (data[:point], f"at {point}", False) if 0 < point < len(data) else None


ELF_MUTATORS = {
    "file-header": file_header,
    "section-header": section_header,
    "symbol": symbol,
    "relocation": relocation,
    "string-table": string_table,
    "cut": cut,
}


def mutate_elf(data: bytes, rng) -> tuple[bytes, str, bool] | None:
    """One ELF-aware mutation: (bytes, "NAME:FIELD", tampering), or None for a payload that
    is no ELF64."""
    if not is_elf64(data):
        return None
    names = sorted(ELF_MUTATORS)
    rng.shuffle(names)
    for name in names:
        result = ELF_MUTATORS[name](data, rng)
        if result is not None:
            return result[0], f"{name}:{result[1]}", result[2]
    return None


def defined_functions(data: bytes) -> set[str]:
    """The names of the defined function symbols of an ELF64 little-endian object."""
    sections, names = _sections(data), set()
    for table in sections:
        if table["sh_type"] != SHT_SYMTAB or table["sh_link"] >= len(sections):
            continue
        strings = sections[table["sh_link"]]["sh_offset"]
        for at in _entries(data, SHT_SYMTAB, 24):
            name, info, _, home = struct.unpack_from("<IBBH", data, at)
            if info & 0xF == STT_FUNC and home:
                end = data.find(b"\0", strings + name)
                names.add(data[strings + name:end].decode("utf-8", "replace"))
    return names
