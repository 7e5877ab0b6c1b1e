"""What a native object for a triple must look like: ELF machine, class, byte order, OS/ABI,
and the relocation types of the machines whose objects this toolchain makes and loads.

elf_check.py reads these tables; they come from the processor supplements of the ELF
ABI (System V gABI, x86-64 and i386 psABIs, ELF for the Arm and AArch64 architectures,
the RISC-V ELF psABI) and from what LLVM writes (checked against objects for every
triple below, built by `relaxc --emit kernels`).
"""

from __future__ import annotations

import functools

from ...records import record

ET_REL, ET_EXEC = 1, 2
EM_386, EM_ARM, EM_X86_64, EM_AARCH64, EM_CUDA, EM_RISCV = 3, 40, 62, 183, 190, 243

# OS/ABI bytes LLVM writes: none (System V) or GNU for every OS, the OS's own for the BSDs,
# NVIDIA's two for cubins.
_OSABI_ANY = frozenset({0, 3})
_OSABI_BY_OS = {"freebsd": 9, "netbsd": 2, "openbsd": 12, "solaris": 6}
_OSABI_CUDA = frozenset({0x33, 0x41})


class ObjectError(ValueError):
    """What is wrong with a native object (container.read adds the file and the target)."""


@record
class Expected:
    """The ELF identity a target's native object must have (None: not checked)."""

    machine: int | None
    bits: int | None
    big_endian: bool | None
    object_type: int = ET_REL
    osabi: frozenset = _OSABI_ANY
    any_abi_version: bool = False


# Architecture (the triple's first part) -> (e_machine, ELF class, big-endian).
_MACHINES = {
    "x86_64": (EM_X86_64, 64, False), "amd64": (EM_X86_64, 64, False),
    "i386": (EM_386, 32, False), "i486": (EM_386, 32, False), "i586": (EM_386, 32, False),
    "i686": (EM_386, 32, False),
    "aarch64": (EM_AARCH64, 64, False), "arm64": (EM_AARCH64, 64, False), "aarch64_be": (EM_AARCH64, 64, True),
    "riscv64": (EM_RISCV, 64, False), "riscv32": (EM_RISCV, 32, False),
    "powerpc64le": (21, 64, False), "ppc64le": (21, 64, False), "powerpc64": (21, 64, True),
    "ppc64": (21, 64, True), "powerpc": (20, 32, True), "ppc": (20, 32, True),
    "mips": (8, 32, True), "mipsel": (8, 32, False), "mips64": (8, 64, True), "mips64el": (8, 64, False),
    "s390x": (22, 64, True), "sparcv9": (43, 64, True), "loongarch64": (258, 64, False),
    "hexagon": (164, 32, False), "bpf": (247, 64, False), "bpfel": (247, 64, False), "bpfeb": (247, 64, True),
    "amdgcn": (224, 64, False), "nvptx64": (EM_CUDA, 64, False),
}


@functools.lru_cache(maxsize=64)
def expected_for(triple: str, object_format: str) -> Expected:
    """The identity of an ELF object for `triple`; an architecture not listed is checked for
    structure only."""
    parts = triple.split("-")
    arch = parts[0]
    if object_format == "cubin" or arch == "nvptx64":
        return Expected(EM_CUDA, 64, False, ET_EXEC, _OSABI_CUDA, any_abi_version=True)
    if arch.startswith(("arm", "thumb")) and arch not in _MACHINES:
        found = (EM_ARM, 32, arch.endswith("eb"))
    else:
        found = _MACHINES.get(arch, (None, None, None))
    machine, bits, big_endian = found
    if machine == EM_X86_64 and any(part.endswith("gnux32") for part in parts[1:]):
        bits = 32  # the x32 ABI: x86-64 code in ELF32 objects
    osabi = _OSABI_ANY | {code for name, code in _OSABI_BY_OS.items() if any(p.startswith(name) for p in parts)}
    return Expected(machine, bits, big_endian, ET_REL, frozenset(osabi), any_abi_version=arch == "amdgcn")


def abi_flags_problem(machine: int, flags: int, triple: str) -> str | None:
    """Why e_flags do not fit the ABI this toolchain compiles `triple` for, or None."""
    if machine == EM_RISCV:
        # relaxc compiles RISC-V for the double-float ABI (lp64d/ilp32d), as Linux runs it.
        if flags & 0x6 != 0x4:
            names = {0x0: "soft-float", 0x2: "single-float", 0x4: "double-float", 0x6: "quad-float"}
            return f"its float ABI is {names[flags & 0x6]}, not the double-float ABI of the target"
        if flags & 0x8:
            return "it is for the RV32E/RV64E embedded ABI"
    if machine == EM_ARM and "eabi" in triple and flags >> 24 != 5:
        return f"it is for ARM EABI version {flags >> 24}, not version 5"
    return None


# ARM types that patch fewer than 4 bytes, or are dynamic (17-23) or thread-local (104-111).
_ARM_NOT_FOUR_BYTES = frozenset({0, 5, 7, 8, 11, 52, 102, 103, 132, 133, 134, 135, *range(17, 24), *range(104, 112)})

# Section flags LLVM writes: write, alloc, exec, merge, strings, info link, link order,
# OS-nonconforming, group, compressed, GNU retain, x86-64 large, ARM pure code, exclude.
# Not SHF_TLS (0x400): a kernel has no thread-locals, and MCJIT cannot allocate them.
KNOWN_SECTION_FLAGS = 0x1 | 0x2 | 0x4 | 0x10 | 0x20 | 0x40 | 0x80 | 0x100 | 0x200 | 0x800 | 0x200000 \
    | 0x10000000 | 0x20000000 | 0x80000000




def relocatable_section_type(kind: int) -> bool:
    """Whether a section of type `kind` belongs in a relocatable object: null, program bits,
    symbols, strings, relocations, notes, zeroed bits, init/fini arrays, groups, LLVM's and
    GNU's own, processor-specific (unwind tables, attributes). Not dynamic-linking tables."""
    return kind in (0, 1, 2, 3, 4, 7, 8, 9, 14, 15, 16, 17) or 0x6FFF4C00 <= kind <= 0x6FFF4CFF \
        or kind == 0x6FFFFFF5 or 0x70000000 <= kind <= 0x7FFFFFFF


def _table(*groups) -> dict[int, int]:
    """{relocation type: bytes it patches} from (types, width) pairs."""
    return {kind: width for kinds, width in groups for kind in kinds}


# The relocation types a relocatable object for each machine may use (position-independent
# code without thread-locals, what relaxc compiles) and the bytes each one patches at r_offset.
# For x86-64 these are the types MCJIT's RuntimeDyld implements (others abort the process);
# the other machines' lists follow their psABI.
RELOCATION_WIDTHS = {
    EM_X86_64: _table(((0,), 0), ((2, 4, 9, 26, 41, 42), 4), ((1, 24, 25, 27, 29), 8)),
    EM_386: _table(((0,), 0), ((22, 23), 1), ((20, 21), 2), ((1, 2, 3, 4, 9, 10, 11, 43), 4)),
    EM_AARCH64: _table(
        ((0, 256), 0), ((259, 262), 2), ((257, 260, 307), 8),
        ((258, 261, *range(263, 294), *range(300, 307), *range(308, 316)), 4),
    ),
    EM_RISCV: _table(
        ((0, 43, 51, 191), 0), ((33, 37, 52, 53, 54, 60, 61), 1), ((34, 38, 44, 45, 55), 2),
        ((1, 16, 17, 20, 23, 24, 25, 26, 27, 28, 35, 39, 41, 56, 57, 59), 4), ((2, 18, 19, 36, 40), 8),
    ),
    EM_ARM: _table(
        ((0,), 0), ((8,), 1), ((5, 7, 11, 52, 102, 103, 132, 133, 134, 135), 2),
        ((kind for kind in range(1, 141) if kind not in _ARM_NOT_FOUR_BYTES), 4),
    ),
}
