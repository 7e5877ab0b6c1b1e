"""Checks of a kernel object's native code before LLVM (or the CUDA driver) is given it.

MCJIT trusts the object it links: a section, symbol or relocation that points outside
the file makes it read or write stray memory, and the process dies by a signal. So
container.read checks every native object of a .ko here, in pure Python, with one pass
over each table (time linear in the object, nothing allocated beyond its size):

- the ELF header: magic, class and byte order of the target's architecture, version,
  type (relocatable; a cubin is an executable), the machine of the target's triple,
  OS/ABI, header and entry sizes, ABI flags (elf_machines.py);
- the section table and every section's bytes (but SHT_NOBITS) inside the file,
  alignments powers of two up to MAX_ALIGNMENT, zero-filled sizes up to MAX_ZEROED_BYTES;
- string tables NUL-terminated, every section and symbol name inside its table;
- the symbol table: entry size, locals first, every section index valid (or special),
  every defined symbol's value inside its section, common symbols bounded; in a
  relocatable object for MCJIT, every function inside its executable section, functions
  not overlapping, each kernel's entry symbol a function (elf_functions.py), and in a
  format 0.5 .ko each kernel's signature digest stored beside it (kernel_signatures.py);
- relocations (elf_relocations.py): entry size, sh_link to the symbol table, sh_info to
  a section with bytes, every symbol index inside the symbol table, every patched field
  inside its section; section groups; .eh_frame records chained inside their section.

For the machines relaxc compiles CPU kernels for (elf_machines.RELOCATION_WIDTHS) the
checks also hold what MCJIT assumes of LLVM's own output, where it would otherwise abort
the process: known section flags (no thread-locals), symbol kinds and bindings it
resolves, relocation types it implements, each relocation's target inside (or just
past) the loaded section it refers to. The code itself is not judged: a kernel object
is native code, and corrupted code is for the checksum and the signature to catch.

The manifest's object format must be the one LLVM writes for the triple; Mach-O and COFF
objects (darwin and windows triples) are checked for magic and machine only.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from ...diagnostics import UserError
from . import elf_functions, elf_relocations, kernel_signatures
from .elf_machines import (ET_EXEC, KNOWN_SECTION_FLAGS, RELOCATION_WIDTHS, Expected, ObjectError, abi_flags_problem,
                           expected_for, relocatable_section_type)

ELF_MAGIC = b"\x7fELF"
MAX_ALIGNMENT = 1 << 16  # a section or common symbol aligned beyond this is not what LLVM writes
MAX_ZEROED_BYTES = 1 << 30  # zero-filled memory (SHT_NOBITS, common symbols) one object may ask for

SHT_NULL, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 0, 2, 3, 4, 8, 9
SHT_GROUP, SHT_SYMTAB_SHNDX = 17, 18
SHN_UNDEF, SHN_LORESERVE, SHN_ABS, SHN_COMMON, SHN_XINDEX = 0, 0xFF00, 0xFFF1, 0xFFF2, 0xFFFF
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STT_FUNC, STT_SECTION, STT_FILE = 2, 3, 4
SHF_ALLOC = 0x2

# Mach-O magic and CPU type, COFF machine, by architecture (the checks of a non-ELF object).
_MACHO_CPU = {"x86_64": 0x01000007, "aarch64": 0x0100000C, "arm64": 0x0100000C}
_COFF_MACHINE = {"x86_64": 0x8664, "aarch64": 0xAA64, "arm64": 0xAA64, "i686": 0x14C, "i386": 0x14C}


class Section(NamedTuple):
    name: int
    kind: int
    flags: int
    address: int
    offset: int
    size: int
    link: int
    info: int
    alignment: int
    entry_size: int


class Layout(NamedTuple):
    """The structs of one ELF class and byte order."""

    bits: int
    order: str  # struct's byte order character
    header: struct.Struct
    section: struct.Struct
    symbol: struct.Struct
    rel: struct.Struct
    rela: struct.Struct


def _layout(bits: int, big_endian: bool) -> Layout:
    order = ">" if big_endian else "<"
    if bits == 64:
        formats = ("HHIQQQIHHHHHH", "IIQQQQIIQQ", "IBBHQQ", "QQ", "QQq")
    else:
        formats = ("HHIIIIIHHHHHH", "IIIIIIIIII", "IIIBBH", "II", "IIi")
    return Layout(bits, order, *(struct.Struct(order + text) for text in formats))


LAYOUTS = {(bits, big): _layout(bits, big) for bits in (32, 64) for big in (False, True)}


def check_native_objects(kernel_object, name: str, signed: bool = False) -> None:
    """Checks every native object of every target of a decoded .ko; a UserError names the
    file, the target (and part) and what is wrong. `signed` (format 0.5): each CPU kernel's
    part also stores its signature digest (kernel_signatures.py)."""
    for index, target in enumerate(kernel_object.targets):
        codes, checked = kernel_object.native_objects(index), []
        for part, code in enumerate(codes):
            try:
                checked.append(check_object(code, target.triple, target.object_format))
            except ObjectError as exc:
                where = f"target {index} ({target.triple})"
                if len(codes) > 1:
                    where += f", part {part + 1} of {len(codes)},"
                raise UserError(f"'{name}' is not a valid kernel object: the native object of {where} "
                                f"is malformed: {exc}") from None
        if checked and all(elf is not None and elf.strict for elf in checked):  # MCJIT's: CPU kernels
            try:
                elf_functions.check_entry_symbols(checked, kernel_object.kernels)
                if signed:
                    kernel_signatures.check_signatures(checked, kernel_object.kernels)
            except ObjectError as exc:
                raise UserError(f"'{name}' is not a valid kernel object: target {index} ({target.triple}): "
                                f"{exc}") from None


def object_format_of(triple: str) -> str:
    """The object format LLVM writes for `triple` (as codegen records it in the manifest)."""
    systems = triple.split("-")[1:]
    if triple.startswith("nvptx"):
        return "cubin"
    if any(system.startswith(("darwin", "macos")) for system in systems):
        return "macho"
    return "coff" if any(system.startswith("windows") for system in systems) else "elf"


def check_object(data: bytes, triple: str, object_format: str = "elf") -> "ElfObject | None":
    """Raises ObjectError unless `data` is a well-formed object for `triple`; the checked
    ELF object (its sections and symbols read), or None for Mach-O and COFF."""
    if object_format != object_format_of(triple):
        # LLVM would parse the bytes as the format they claim, for a triple that may run here.
        raise ObjectError(f"the manifest gives object format '{object_format}', a {triple} target's "
                          f"is '{object_format_of(triple)}'")
    if object_format in ("macho", "coff"):
        _check_foreign(bytes(data), triple, object_format)
        return None
    elf = ElfObject(bytes(data), triple)
    elf.check()
    return elf


def _check_foreign(data: bytes, triple: str, object_format: str) -> None:
    arch = triple.split("-")[0]
    if object_format == "macho":
        if len(data) < 32 or data[:4] not in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe"):
            raise ObjectError("not a Mach-O object (bad magic number)")
        cpu, = struct.unpack_from("<I", data, 4)
        if arch in _MACHO_CPU and cpu != _MACHO_CPU[arch]:
            raise ObjectError(f"Mach-O CPU type {cpu:#x}, expected {_MACHO_CPU[arch]:#x} for {arch}")
        return
    if len(data) < 20:
        raise ObjectError("not a COFF object (shorter than its header)")
    machine, = struct.unpack_from("<H", data, 0)
    if arch in _COFF_MACHINE and machine != _COFF_MACHINE[arch]:
        raise ObjectError(f"COFF machine {machine:#x}, expected {_COFF_MACHINE[arch]:#x} for {arch}")


class Symbol(NamedTuple):
    section: int  # st_shndx
    value: int
    binding: int
    kind: int
    named: bool  # a non-empty name
    size: int = 0  # st_size: a common symbol's extent bounds the addends that refer to it


class ElfObject:
    """One ELF object being checked: header first, then the tables that depend on it."""

    def __init__(self, data: bytes, triple: str):
        self.data = data
        self.triple = triple
        self.expected: Expected = expected_for(triple, "elf")
        self.layout: Layout | None = None
        self.machine = 0
        self.strict = False  # a machine whose objects MCJIT loads: its assumptions are checked too
        self.sections: list[Section] = []
        self.names: Section | None = None
        self.symbol_table: int | None = None
        self.symbols: list[Symbol] = []
        self.functions: list[elf_functions.FunctionSymbol] = []  # defined STT_FUNC, in a relocatable object

    def check(self) -> None:
        self._read_sections(self._check_header())
        for index, section in enumerate(self.sections):
            self._check_extent(index, section)
        for index, section in enumerate(self.sections):
            if section.name >= self.names.size:
                raise ObjectError(f"the name of section {index} lies outside the section name table")
        symbol_tables = [index for index, section in enumerate(self.sections) if section.kind == SHT_SYMTAB]
        if len(symbol_tables) > 1:
            raise ObjectError(f"{len(symbol_tables)} symbol tables, a relocatable object has one")
        if symbol_tables:
            self.symbol_table = symbol_tables[0]
            self._check_symbols(self.symbol_table)
            elf_functions.check_functions(self)
        for index, section in enumerate(self.sections):
            if section.kind in (SHT_REL, SHT_RELA):
                elf_relocations.check_relocations(self, index, section)
            elif section.kind == SHT_GROUP:
                elf_relocations.check_group(self, index, section)
            elif section.kind != SHT_NOBITS and self.section_name(index) == ".eh_frame":
                elf_relocations.check_eh_frame(self, index, section)

    # -- header and section table

    def _check_header(self) -> tuple:
        data, expected = self.data, self.expected
        if len(data) < 16:
            raise ObjectError(f"{len(data)} bytes, shorter than an ELF identification (truncated)")
        if data[:4] != ELF_MAGIC:
            raise ObjectError("bad ELF magic number (not an ELF object)")
        bits, big = {1: 32, 2: 64}.get(data[4]), {1: False, 2: True}.get(data[5])
        if bits is None or big is None or data[6] != 1:
            raise ObjectError(f"unknown ELF class {data[4]}, byte order {data[5]} or version {data[6]}")
        if expected.bits is not None and (bits, big) != (expected.bits, expected.big_endian):
            raise ObjectError(f"ELF{bits} {'big' if big else 'little'}-endian, the target's code is "
                              f"ELF{expected.bits} {'big' if expected.big_endian else 'little'}-endian")
        if data[7] not in expected.osabi or (data[8] and not expected.any_abi_version):
            raise ObjectError(f"OS/ABI {data[7]} version {data[8]} does not fit the target")
        self.layout = layout = LAYOUTS[bits, big]
        if len(data) < layout.header.size + 16:
            raise ObjectError(f"{len(data)} bytes, shorter than an ELF{bits} header (truncated)")
        header = layout.header.unpack_from(data, 16)
        kind, machine, version, _, _, _, flags, header_size, _, program_headers = header[:10]
        if kind != expected.object_type:
            want = "an executable (cubin)" if expected.object_type == ET_EXEC else "a relocatable object"
            raise ObjectError(f"ELF type {kind}, expected {want}")
        if expected.machine is not None and machine != expected.machine:
            raise ObjectError(f"ELF machine {machine}, the target's is {expected.machine}")
        if version != 1 or header_size != layout.header.size + 16:
            raise ObjectError(f"ELF version {version} or header size {header_size} is wrong")
        if program_headers and expected.object_type != ET_EXEC:
            raise ObjectError("a relocatable object with program headers")
        problem = abi_flags_problem(machine, flags, self.triple)
        if problem:
            raise ObjectError(problem)
        self.machine, self.strict = machine, machine in RELOCATION_WIDTHS
        return header

    def _read_sections(self, header: tuple) -> None:
        layout, size = self.layout, len(self.data)
        table, entry_size, count, names = header[5], header[10], header[11], header[12]
        if entry_size != layout.section.size:
            raise ObjectError(f"section header size {entry_size}, expected {layout.section.size}")
        if count == 0 or names in (SHN_UNDEF, SHN_XINDEX):
            raise ObjectError("no section table or no section name table (extended numbering is not supported)")
        if table % (layout.bits // 8):
            raise ObjectError(f"the section table offset {table} is misaligned")
        if table + count * entry_size > size:
            raise ObjectError(f"the section table ({count} entries at offset {table}) runs past the end "
                              f"of the object ({size} bytes)")
        unpack = layout.section.unpack_from
        self.sections = [Section(*unpack(self.data, table + index * entry_size)) for index in range(count)]
        if self.sections[0] != Section(0, SHT_NULL, 0, 0, 0, 0, 0, 0, 0, 0):
            raise ObjectError("section 0 is not the null section")
        if names >= count or self.sections[names].kind != SHT_STRTAB:
            raise ObjectError(f"the section name table index {names} is not a string table "
                              f"of the {count} sections")
        self.names = self.sections[names]

    def section_name(self, index: int) -> str:
        return self.string(self.names, self.sections[index].name)

    def string(self, table: Section, offset: int) -> str:
        end = self.data.index(b"\0", table.offset + offset)  # the table ends with a NUL (checked)
        return self.data[table.offset + offset:end].decode("utf-8", "replace")

    def _check_extent(self, index: int, section: Section) -> None:
        """Where a section lies and how it is aligned; the contents of a string table."""
        what = f"section {index}"
        alignment = section.alignment
        if alignment & (alignment - 1) or alignment > MAX_ALIGNMENT:
            raise ObjectError(f"{what} has alignment {alignment}, not a power of two up to {MAX_ALIGNMENT}")
        if self.strict and section.flags & ~KNOWN_SECTION_FLAGS:
            raise ObjectError(f"{what} has flags {section.flags:#x}: thread-local or unknown to the loader")
        if self.strict and not relocatable_section_type(section.kind):
            raise ObjectError(f"{what} has type {section.kind:#x}, which has no place in a relocatable object")
        if section.kind == SHT_NOBITS:
            if section.size > MAX_ZEROED_BYTES:
                raise ObjectError(f"{what} asks for {section.size} bytes of zeroed memory, "
                                  f"more than the limit of {MAX_ZEROED_BYTES}")
            return
        if section.offset + section.size > len(self.data):
            raise ObjectError(f"{what} (offset {section.offset}, {section.size} bytes) runs past the end "
                              f"of the object ({len(self.data)} bytes)")
        if section.kind == SHT_STRTAB:
            text = self.data[section.offset:section.offset + section.size]
            if not text or text[0] != 0 or text[-1] != 0:
                raise ObjectError(f"string table section {index} is empty or not NUL-delimited")
        elif section.kind == SHT_SYMTAB_SHNDX:
            raise ObjectError("extended section indices (SHT_SYMTAB_SHNDX) are not supported")

    def table_entries(self, index: int, section: Section, entry: struct.Struct) -> int:
        """The number of entries of a table section of `entry`s (checked: size, alignment)."""
        if section.entry_size != entry.size or section.size % entry.size:
            raise ObjectError(f"section {index} ('{self.section_name(index)}') has entry size "
                              f"{section.entry_size} and size {section.size}, expected entries of {entry.size}")
        if section.offset % min(entry.size, self.layout.bits // 8):
            raise ObjectError(f"section {index} ('{self.section_name(index)}') is misaligned in the file")
        return section.size // entry.size

    def entries(self, section: Section, entry: struct.Struct):
        return entry.iter_unpack(self.data[section.offset:section.offset + section.size])

    # -- symbols

    def _check_symbols(self, index: int) -> None:
        table = self.sections[index]
        count = self.table_entries(index, table, self.layout.symbol)
        if not 0 < table.link < len(self.sections) or self.sections[table.link].kind != SHT_STRTAB:
            raise ObjectError(f"the symbol table links to section {table.link}, not a string table")
        if count == 0 or table.info > count:
            raise ObjectError(f"the symbol table has {count} symbols and {table.info} locals")
        strings, ordered = self.sections[table.link], self.expected.object_type != ET_EXEC
        wide = self.layout.bits == 64
        for number, fields in enumerate(self.entries(table, self.layout.symbol)):
            name, info, _, section, value, size = fields if wide else (fields[0], *fields[3:], *fields[1:3])
            if name >= strings.size:
                raise ObjectError(f"symbol {number}'s name lies outside its string table")
            if ordered and (info >> 4 == STB_LOCAL) != (number < table.info):
                raise ObjectError(f"symbol {number} breaks the order of local then global symbols")
            symbol = Symbol(section, value, info >> 4, info & 0xF, self.data[strings.offset + name] != 0, size)
            self._check_symbol_section(number, symbol, size)
            if self.strict and number:
                self._check_symbol_kind(number, symbol)
            self.symbols.append(symbol)
            if ordered and self.strict and symbol.kind == STT_FUNC and SHN_UNDEF < section < SHN_LORESERVE:
                self.functions.append(elf_functions.FunctionSymbol(number, section, value, size,
                                                                   self.string(strings, name)))

    def _check_symbol_section(self, number: int, symbol: Symbol, size: int) -> None:
        section, value = symbol.section, symbol.value
        if section == SHN_COMMON:
            if not value or value & (value - 1) or value > MAX_ALIGNMENT or size > MAX_ZEROED_BYTES:
                raise ObjectError(f"common symbol {number} has alignment {value} and size {size}, beyond "
                                  f"the limits {MAX_ALIGNMENT} and {MAX_ZEROED_BYTES}")
        elif section >= SHN_LORESERVE:
            if section != SHN_ABS:
                raise ObjectError(f"symbol {number} has the unsupported special section index {section:#x}")
        elif section >= len(self.sections):
            raise ObjectError(f"symbol {number} names section {section}, the object has {len(self.sections)}")
        elif section != SHN_UNDEF and value > self.sections[section].size:
            raise ObjectError(f"symbol {number} lies at {value}, past the end of its section {section} "
                              f"({self.sections[section].size} bytes)")

    def _check_symbol_kind(self, number: int, symbol: Symbol) -> None:
        """What MCJIT resolves: local, global or weak symbols with no type, of data, code, a
        section or a file; global ones named, undefined ones global (the process provides them)."""
        if symbol.binding not in (STB_LOCAL, STB_GLOBAL, STB_WEAK) or symbol.kind > STT_FILE:
            raise ObjectError(f"symbol {number} has binding {symbol.binding} and type {symbol.kind}, "
                              "which the loader does not resolve (thread-local, indirect or unknown)")
        if symbol.kind == STT_SECTION and not 0 < symbol.section < len(self.sections):
            raise ObjectError(f"section symbol {number} names no section")
        if (symbol.kind == STT_FILE) != (symbol.section == SHN_ABS):
            raise ObjectError(f"symbol {number} has type {symbol.kind} and section index {symbol.section:#x}: "
                              "file symbols are absolute, and only they")
        if symbol.binding != STB_LOCAL and not symbol.named:
            raise ObjectError(f"global symbol {number} has no name")
        if symbol.binding != STB_LOCAL and 0 < symbol.section < SHN_LORESERVE \
                and not self.sections[symbol.section].flags & SHF_ALLOC:
            raise ObjectError(f"global symbol {number} is defined in section {symbol.section}, which is not loaded")
        if symbol.section == SHN_UNDEF and symbol.binding == STB_LOCAL:
            raise ObjectError(f"symbol {number} is undefined and local")
