"""Every allocated section of an ELF object aligned to at least LOAD_ALIGNMENT before MCJIT places it.

Kernels load their constants with aligned vector instructions (vmovaps on a 64-byte
constant pool). The checks of elf_check.py cannot know what alignment the code assumes,
so an object whose section header claims less than that (tampered, its checksums
recomputed) would be placed where those loads fault. Aligning a section more than it
asks is always correct, so the loader raises every allocated section to the widest
vector and a cache line.
"""

from __future__ import annotations

import struct

LOAD_ALIGNMENT = 64  # bytes: an AVX-512 vector and a cache line

_ELF_MAGIC = b"\x7fELF"
_SHF_ALLOC = 0x2
# By ELF class (1: 32-bit, 2: 64-bit): where e_shoff, e_shentsize and e_shnum lie in the
# header, and where sh_flags and sh_addralign lie in a section header, with their formats.
_FIELDS = {
    1: {"shoff": (32, "I"), "shentsize": (46, "H"), "shnum": (48, "H"), "flags": (8, "I"), "align": (32, "I")},
    2: {"shoff": (40, "Q"), "shentsize": (58, "H"), "shnum": (60, "H"), "flags": (8, "Q"), "align": (48, "Q")},
}


def with_load_alignment(data: bytes, minimum: int = LOAD_ALIGNMENT) -> bytes:
    """`data` with each SHF_ALLOC section's sh_addralign raised to `minimum` (other objects as they are).

    Called on objects elf_check.py has accepted: the section table lies within the file."""
    if data[:4] != _ELF_MAGIC or data[4] not in _FIELDS or data[5] not in (1, 2):
        return data
    fields, order = _FIELDS[data[4]], "<" if data[5] == 1 else ">"

    def read(buffer, offset: int, field: str) -> int:
        where, form = fields[field]
        return struct.unpack_from(order + form, buffer, offset + where)[0]

    table, entry_size, count = read(data, 0, "shoff"), read(data, 0, "shentsize"), read(data, 0, "shnum")
    if table + count * entry_size > len(data):
        return data
    out = bytearray(data)
    where, form = fields["align"]
    for index in range(count):
        entry = table + index * entry_size
        if read(out, entry, "flags") & _SHF_ALLOC and read(out, entry, "align") < minimum:
            struct.pack_into(order + form, out, entry + where, minimum)
    return bytes(out)
