"""The symbols a native object needs from the loading process, and whether it has them.

MCJIT binds an unresolved symbol to address 0, so a kernel calling it would crash
the process. The loader therefore reads the object's undefined symbols first (ELF64
little-endian objects; other formats are not inspected) and looks each one up,
loading SUPPORT_LIBRARIES when needed: the C math library, glibc's vector math
library (libmvec, see relax/codegen/vector_math.py), and libgcc for the
float16 conversion helpers (__extendhfsf2, __truncsfhf2) that code for CPUs
without half-precision instructions calls.
"""

from __future__ import annotations

import ctypes
import struct

import llvmlite.binding as llvm

SUPPORT_LIBRARIES = ("libm.so.6", "libmvec.so.1", "libgcc_s.so.1", "libm.dylib", "libSystem.B.dylib")

_SHT_SYMTAB = 2
_STB_GLOBAL, _STB_WEAK = 1, 2


def undefined_symbols(data: bytes) -> list[str] | None:
    """Names of the global undefined symbols of an ELF64 little-endian object, else None."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    section_offset, = struct.unpack_from("<Q", data, 0x28)
    entry_size, count = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for index in range(count):
        start = section_offset + index * entry_size
        if start + 64 > len(data):
            return None
        _, kind, _, _, offset, size, link, _, _, _ = struct.unpack_from("<IIQQQQIIQQ", data, start)
        sections.append((kind, offset, size, link))
    names = []
    for kind, offset, size, link in sections:
        if kind != _SHT_SYMTAB or link >= len(sections):
            continue
        _, strings_offset, strings_size, _ = sections[link]
        strings = data[strings_offset:strings_offset + strings_size]
        for start in range(offset + 24, offset + size, 24):  # entry 0 is the null symbol
            name_offset, info, _, section_index = struct.unpack_from("<IBBH", data, start)
            if section_index == 0 and info >> 4 in (_STB_GLOBAL, _STB_WEAK) and name_offset:
                names.append(strings[name_offset:strings.index(b"\0", name_offset)].decode("utf-8", "replace"))
    return sorted(set(names))


def _in_process(name: str) -> bool:
    if llvm.address_of_symbol(name):
        return True
    try:
        return hasattr(ctypes.CDLL(None), name)
    except OSError:
        return False


def missing_symbols(names: list[str] | None) -> list[str]:
    """The names this process cannot provide, after loading the support libraries if needed."""
    if not names:
        return []
    missing = [name for name in names if not _in_process(name)]
    if missing:
        for library in SUPPORT_LIBRARIES:
            try:
                llvm.load_library_permanently(library)
            except RuntimeError:
                continue
        missing = [name for name in missing if not _in_process(name)]
    return missing
