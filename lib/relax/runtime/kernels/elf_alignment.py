"""Every allocated section of an ELF object aligned to at least LOAD_ALIGNMENT before MCJIT places it.

Kernels load their constants with aligned vector instructions (vmovaps on a 64-byte
constant pool). The checks of elf_check.py cannot know what alignment the code assumes,
so an object whose section header claims less than that (tampered, its checksums
recomputed) would be placed where those loads fault. Aligning a section more than it
asks is always correct, so the loader raises every allocated section to the widest
vector and a cache line.
"""

from __future__ import annotations

from .elf_check import ELF_MAGIC, LAYOUTS, SHF_ALLOC, Section

LOAD_ALIGNMENT = 64  # bytes: an AVX-512 vector and a cache line


def with_load_alignment(data: bytes, minimum: int = LOAD_ALIGNMENT) -> bytes:
    """`data` with each SHF_ALLOC section's sh_addralign raised to `minimum` (other objects as they are).

    Called on objects elf_check.py has accepted: the section table lies within the file."""
    if len(data) < 16 or data[:4] != ELF_MAGIC:
        return data
    layout = LAYOUTS.get(({1: 32, 2: 64}.get(data[4]), data[5] == 2))  # class and byte order
    if layout is None:
        return data
    header = layout.header.unpack_from(data, 16)
    table, entry_size, count = header[5], header[10], header[11]
    if entry_size != layout.section.size or table + count * entry_size > len(data):
        return data
    out = bytearray(data)
    for at in range(table, table + count * entry_size, entry_size):
        section = Section(*layout.section.unpack_from(out, at))
        if section.flags & SHF_ALLOC and section.alignment < minimum:
            layout.section.pack_into(out, at, *section._replace(alignment=minimum))
    return bytes(out)
