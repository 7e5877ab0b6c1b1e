"""The relocation sections, section groups and unwind tables of an ELF object (elf_check.py).

Every relocation's symbol index and patched field are checked against the tables they
point into. For the machines MCJIT loads (elf_check.ElfObject.strict) each relocation
must also be one the loader can apply as LLVM would have written it: a known type; a
symbol that is undefined (the process provides it) or defined in a section, loaded when
the patched section is; an addend that keeps the target inside that section (see
_check_target: RuntimeDyld applies whatever it is given, and a call to `expf + 0xffff`
jumped into the middle of nowhere); and, on x86-64, a zero field under the relocation
(LLVM writes addends in the entry, and MCJIT adds the field's bytes to some of them). MCJIT finds every symbol
but a section's by its name, so those must have one; and an x86-64 PC-relative 32-bit
field cannot reach a symbol of the process, which may lie further than 2 GiB away.
MCJIT stops the process on anything else (an assertion or a fatal error).
"""

from __future__ import annotations

import struct

from .elf_machines import EM_AARCH64, EM_X86_64, RELOCATION_WIDTHS, ObjectError

SHT_NULL, SHT_SYMTAB, SHT_RELA, SHT_NOBITS = 0, 2, 4, 8
SHN_UNDEF, SHN_LORESERVE, SHN_COMMON = 0, 0xFF00, 0xFFF2
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4
STT_FUNC, STT_SECTION, STT_FILE = 2, 3, 4
R_X86_64_PC32, R_X86_64_PLT32 = 2, 4
R_AARCH64_JUMP26, R_AARCH64_CALL26 = 282, 283

# How far before its target a PC-relative relocation may point: the field counts from the
# end of its instruction, on x86-64 at most 8 bytes on (a 4-byte displacement, then a
# 4-byte immediate); LLVM writes `.rodata - 4`, `expf - 4`. Other machines' biases are 0.
PC_BIAS = 8
# Calls and jumps: LLVM writes exactly these addends to a function or an external symbol
# (x86-64's call/jmp end with their 4-byte field; aarch64's BL and B carry no bias). Any
# other lands inside the function.
CALL_ADDENDS = {(EM_X86_64, R_X86_64_PLT32): -4, (EM_AARCH64, R_AARCH64_CALL26): 0,
                (EM_AARCH64, R_AARCH64_JUMP26): 0}


def check_relocations(elf, index: int, section) -> None:
    """A REL or RELA section: its links, then each relocation."""
    name = elf.section_name(index)
    entry = elf.layout.rela if section.kind == SHT_RELA else elf.layout.rel
    elf.table_entries(index, section, entry)
    if elf.symbol_table is None or section.link != elf.symbol_table:
        raise ObjectError(f"relocation section '{name}' links to section {section.link}, not the symbol table")
    target_index = section.info
    if not 0 < target_index < len(elf.sections) or elf.sections[target_index].kind in (SHT_NULL, SHT_NOBITS):
        raise ObjectError(f"relocation section '{name}' applies to section {target_index}, not a section with bytes")
    target = elf.sections[target_index]
    if elf.strict and not target.flags & SHF_ALLOC:
        raise ObjectError(f"relocation section '{name}' applies to section {target_index}, which is not loaded "
                          "(kernels carry no debug information)")
    widths = RELOCATION_WIDTHS.get(elf.machine) if elf.strict else None
    shift, mask = (32, 0xFFFFFFFF) if elf.layout.bits == 64 else (8, 0xFF)
    zero_fields = elf.strict and elf.machine == EM_X86_64 and section.kind == SHT_RELA
    for number, fields in enumerate(elf.entries(section, entry)):
        offset, info = fields[0], fields[1]
        symbol, kind = info >> shift, info & mask
        if symbol >= len(elf.symbols):
            raise ObjectError(f"{_where(number, name)} names symbol {symbol}, the symbol table has {len(elf.symbols)}")
        width = 1 if widths is None else widths.get(kind)
        if width is None:
            raise ObjectError(f"{_where(number, name)} has type {kind}, which the loader does not apply "
                              f"for machine {elf.machine}")
        if offset + width > target.size:
            raise ObjectError(f"{_where(number, name)} patches offset {offset}, outside its section "
                              f"({target.size} bytes)")
        if not elf.strict:
            continue
        _check_target(elf, (number, name), symbol, (kind, width, offset, target),
                      fields[2] if len(fields) > 2 else 0)
        if zero_fields and kind == R_X86_64_PC32 and elf.symbols[symbol].section == SHN_UNDEF:
            raise ObjectError(f"{_where(number, name)} is a 32-bit PC-relative reference to an external symbol")
        start = target.offset + offset
        if zero_fields and any(elf.data[start:start + width]):
            raise ObjectError(f"{_where(number, name)} patches bytes that are not zero "
                              "(LLVM writes the addend in the entry)")


def _where(number: int, section_name: str) -> str:
    return f"relocation {number} of '{section_name}'"


def _check_target(elf, relocation: tuple, number: int, patch: tuple, addend: int) -> None:
    """What a relocation refers to: a symbol the loader resolves, and a place inside it.

    `patch` is (type, field width, r_offset, patched section). The target, symbol value +
    addend, must lie in the symbol's section, PC_BIAS bytes before it allowed; a
    relocation patching data (a jump table's `.LBB - .LJTI` entry) may also point past
    the end by up to its own offset. A call or jump has the one addend LLVM writes
    (CALL_ADDENDS), and an external symbol, whose extent the object does not know, at
    most a PC-relative bias."""
    kind, width, offset, patched = patch
    if number == 0:
        if width:
            raise ObjectError(f"{_where(*relocation)} refers to no symbol")
        return
    symbol = elf.symbols[number]
    if symbol.kind == STT_FILE:
        raise ObjectError(f"{_where(*relocation)} refers to file symbol {number}")
    if symbol.kind != STT_SECTION and not symbol.named:
        raise ObjectError(f"{_where(*relocation)} refers to symbol {number}, which has no name")
    call_addend = CALL_ADDENDS.get((elf.machine, kind))
    if call_addend is not None and addend != call_addend and symbol.kind != STT_SECTION:
        raise ObjectError(f"{_where(*relocation)} calls symbol {number} with addend {addend}, which lands inside "
                          f"the function (LLVM writes {call_addend})")
    if symbol.section == SHN_UNDEF or symbol.section == SHN_COMMON:
        extent = symbol.size if symbol.section == SHN_COMMON else 0
        if not -PC_BIAS <= addend <= extent:
            raise ObjectError(f"{_where(*relocation)} has addend {addend} to symbol {number} of {extent} bytes "
                              f"(from -{PC_BIAS}, a PC-relative bias, to {extent})")
        return
    if symbol.section >= SHN_LORESERVE:
        raise ObjectError(f"{_where(*relocation)} refers to an absolute symbol ({number})")
    section = elf.sections[symbol.section]
    if not section.flags & SHF_ALLOC:
        raise ObjectError(f"{_where(*relocation)} refers to symbol {number} in section {symbol.section}, "
                          "which is not loaded")
    past_end = 0 if patched.flags & SHF_EXECINSTR else offset
    if not -PC_BIAS <= symbol.value + addend <= section.size + past_end:
        raise ObjectError(f"{_where(*relocation)} points {symbol.value + addend} bytes into section "
                          f"{symbol.section} ({section.size} bytes), outside it")


def check_group(elf, index: int, section) -> None:
    """A section group: a flag word, then indices of existing sections."""
    word = struct.Struct(elf.layout.order + "I")
    count = elf.table_entries(index, section, word)
    members = [member for member, in elf.entries(section, word)][1:]
    if count == 0 or any(not 0 < member < len(elf.sections) for member in members):
        raise ObjectError(f"section group {index} names a section that does not exist")


def check_eh_frame(elf, index: int, section) -> None:
    """CIE and FDE records: each length inside the section, each FDE's CIE pointer back to a
    CIE before it (what an unwinder follows without further checks)."""
    order = elf.layout.order
    data, start, end = elf.data, section.offset, section.offset + section.size
    position, cies = start, set()
    while position + 4 <= end:
        length, = struct.unpack_from(order + "I", data, position)
        if length == 0:
            return
        if length == 0xFFFFFFFF or length < 4 or position + 4 + length > end:
            raise ObjectError(f"the '.eh_frame' record at {position - start} has a length outside section {index}")
        pointer, = struct.unpack_from(order + "I", data, position + 4)
        if pointer == 0:
            cies.add(position - start)
        elif position + 4 - start - pointer not in cies:
            raise ObjectError(f"the '.eh_frame' record at {position - start} points to no CIE")
        position += 4 + length
    if position != end:
        raise ObjectError(f"the '.eh_frame' of section {index} ends inside a record")
