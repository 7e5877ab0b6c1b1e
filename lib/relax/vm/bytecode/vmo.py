"""The .vmo file: an Executable as bytes, and back (docs/file-formats-vmo.md).

    u64 magic 0xD225DE2F4214151E, string version (u64 length + UTF-8)
    4 sections, each u64 payload length + payload: globals, memory scopes,
    constant pool, bytecode (the last also holds the instructions' source locations)
    format 0.2 only: a fifth section, the Python functions (py_functions.py)
    u32 CRC-32 of every byte before it

A .vmo without Python functions is written as format 0.1, byte for byte as before.

Loading checks, in order: the magic, the version, that the section lengths add up
to the file length (truncation), the checksum (corruption), each section's
structure, and finally the verifier. Nothing of the file is run or evaluated.
"""

from __future__ import annotations

import zlib

from ...version import FORMAT_VERSIONS
from .binary import FormatError, Reader, Writer
from .constant_pool import read_constant, write_constant
from .executable import Executable, FuncInfo
from .isa import FuncKind
from .py_functions import check_entries, read_section, write_section
from .verifier import verify

MAGIC = 0xD225DE2F4214151E
MAGIC_BYTES = MAGIC.to_bytes(8, "little")
VERSION = "0.1"  # a .vmo without Python functions: four sections
PY_VERSION = FORMAT_VERSIONS["vmo"]  # "0.2": a fifth section holds the Python functions
SECTIONS = ("globals", "memory scopes", "constant pool", "bytecode")
PY_SECTIONS = SECTIONS + ("Python functions",)


def save_executable(exe: Executable, check: bool = True) -> bytes:
    """The .vmo bytes; `check=False` skips the verifier (tests use it to write bad files)."""
    if check:
        verify(exe)
    out = Writer()
    out.u64(MAGIC)
    out.string(PY_VERSION if exe.py_functions else VERSION)
    payloads = [_globals(exe), _memory_scopes(exe), _constants(exe), _bytecode(exe)]
    if exe.py_functions:
        check_entries(exe.py_functions)
        py_out = Writer()
        write_section(py_out, exe.py_functions)
        payloads.append(py_out)
    for payload in payloads:
        out.u64(payload.size())
        out.extend(payload)
    out.raw(out.crc32().to_bytes(4, "little"))
    return out.getvalue()


def _globals(exe: Executable) -> Writer:
    out = Writer()
    out.u64(len(exe.func_table))
    for info in exe.func_table:
        out.i32(int(info.kind))
        out.string(info.name)
        out.i64(info.start_instr)
        out.i64(info.end_instr)
        out.i64(info.num_args)
        out.i64(info.register_file_size)
        out.u64(len(info.param_names))
        for name in info.param_names:
            out.string(name)
    return out


def _memory_scopes(exe: Executable) -> Writer:
    out = Writer()
    out.u64(len(exe.memory_scopes))
    for const_index in sorted(exe.memory_scopes):
        out.i64(const_index)
        out.string(exe.memory_scopes[const_index])
    return out


def _constants(exe: Executable) -> Writer:
    out = Writer()
    out.u64(len(exe.constants))
    for value in exe.constants:
        write_constant(out, value)
    return out


def _bytecode(exe: Executable) -> Writer:
    out = Writer()
    out.i64_array(exe.instr_offset)
    out.i64_array(exe.instr_data)
    out.u64(len(exe.source_locations))
    for index in sorted(exe.source_locations):
        out.i64(index)
        out.string(exe.source_locations[index])
    return out


# ---- loading ---------------------------------------------------------------------------

def check_header(data: bytes, source: str) -> tuple[int, tuple[str, ...]]:
    """Checks magic and version; returns the offset just past the header and the sections."""
    if len(data) < 8 or data[:8] != MAGIC_BYTES:
        raise FormatError(f"'{source}': not a relax bytecode object (.vmo): bad magic number")
    reader = Reader(data, "header", 8)
    try:
        version = reader.string("version")
    except FormatError:
        raise FormatError(f"'{source}': truncated or corrupted .vmo header") from None
    if version not in (VERSION, PY_VERSION):
        raise FormatError(f"'{source}': .vmo format version {version!r} is not supported "
                          f"(this toolchain reads {VERSION} and {PY_VERSION})")
    return reader.pos, (PY_SECTIONS if version == PY_VERSION else SECTIONS)


def load_executable(data: bytes, source: str = "<bytes>", views: bool = False) -> Executable:
    """The executable of .vmo `data`; `views`: its tensors as read-only views of `data`
    (constant_pool.read_constant), for a caller that inspects and does not run it."""
    data = bytes(data)
    position, sections = check_header(data, source)
    spans = []
    for section in sections:
        if position + 8 > len(data):
            raise FormatError(f"'{source}': truncated file: the {section} section is missing")
        size = int.from_bytes(data[position:position + 8], "little")
        position += 8
        if size > len(data) - position:
            raise FormatError(f"'{source}': truncated file: the {section} section is cut short")
        spans.append((position, position + size))
        position += size
    if len(data) - position != 4:
        problem = "the checksum is missing" if len(data) - position < 4 else "trailing bytes after the checksum"
        raise FormatError(f"'{source}': bad file length: {problem}")
    if zlib.crc32(memoryview(data)[:position]) != int.from_bytes(data[position:], "little"):
        raise FormatError(f"'{source}': checksum mismatch: the file is corrupted")
    try:
        exe = Executable()
        readers = [Reader(data, section, start, end) for section, (start, end) in zip(sections, spans)]
        _read_globals(readers[0], exe)
        _read_memory_scopes(readers[1], exe)
        _read_constants(readers[2], exe, views)
        _read_bytecode(readers[3], exe)
        if len(readers) > 4:
            exe.py_functions = read_section(readers[4])
            if not exe.py_functions:
                raise readers[4].fail("a format 0.2 .vmo names at least one Python function")
        for reader in readers:
            reader.expect_end()
        verify(exe)
    except FormatError as error:
        raise type(error)(f"'{source}': {error}") from None
    except (ValueError, OverflowError, MemoryError) as error:  # a safety net: bad data is never a crash
        raise FormatError(f"'{source}': malformed data: {error}") from None
    return exe


def _read_globals(reader: Reader, exe: Executable) -> None:
    count = reader.count(44, "function")
    for _ in range(count):
        kind = reader.i32()
        if kind not in FuncKind._value2member_map_:
            raise reader.fail(f"unknown function kind {kind}")
        name = reader.string("function name")
        start, end, num_args, registers = reader.i64(), reader.i64(), reader.i64(), reader.i64()
        params = tuple(reader.string("parameter name") for _ in range(reader.count(8, "parameter")))
        exe.func_table.append(FuncInfo(FuncKind(kind), name, start, end, num_args, registers, params))


def _read_memory_scopes(reader: Reader, exe: Executable) -> None:
    previous = -1
    for _ in range(reader.count(16, "memory scope")):
        const_index = reader.i64()
        if const_index <= previous:
            raise reader.fail("memory scopes out of order")
        previous = const_index
        exe.memory_scopes[const_index] = reader.string("memory scope")


def _read_constants(reader: Reader, exe: Executable, views: bool = False) -> None:
    for _ in range(reader.count(1, "constant")):
        exe.constants.append(read_constant(reader, views=views))


def _read_bytecode(reader: Reader, exe: Executable) -> None:
    exe.instr_offset = reader.i64_array("instruction offset")
    exe.instr_data = reader.i64_array("bytecode word")
    previous = -1
    for _ in range(reader.count(16, "source location")):
        index = reader.i64()
        if index <= previous:
            raise reader.fail("source locations out of order")
        previous = index
        exe.source_locations[index] = reader.string("source location")
