"""Native objects for tests whose .ko needs object bytes that pass relax.runtime.kernels.elf_check.

    minimal_object("aarch64-linux-gnu")   # an empty relocatable ELF of the triple's machine
    compiled_object("x86_64-linux-gnu")   # what LLVM writes for a small kernel: symbols, relocations

`minimal_object` builds the bytes itself (no LLVM): a header, the null section and the
section name table, with the machine, class, byte order and ABI flags elf_machines.py
expects of the triple (for nvptx64, a cubin-like executable for EM_CUDA).
"""

from __future__ import annotations

import struct

from relax.runtime.kernels.elf_machines import EM_ARM, EM_CUDA, EM_RISCV, expected_for

_ABI_FLAGS = {EM_RISCV: 0x5, EM_ARM: 0x05000000}  # RVC + double-float; EABI version 5

KERNEL_IR = """
@table = private unnamed_addr constant [8 x float] [float 1.0, float 2.0, float 3.0, float 4.0,
                                                     float 5.0, float 6.0, float 7.0, float 8.0]
declare float @expf(float)
define float @relaxk_k(i64 %i) {
  %p = getelementptr [8 x float], ptr @table, i64 0, i64 %i
  %x = load float, ptr %p
  %y = call float @expf(float %x)
  ret float %y
}
"""


def minimal_object(triple: str) -> bytes:
    """An ELF object with no code that elf_check accepts for `triple`."""
    expected = expected_for(triple, "elf")
    bits, big = expected.bits or 64, bool(expected.big_endian)
    order = ">" if big else "<"
    names = b"\0.shstrtab\0"
    if bits == 64:
        header_format, section_format = order + "HHIQQQIHHHHHH", order + "IIQQQQIIQQ"
    else:
        header_format, section_format = order + "HHIIIIIHHHHHH", order + "IIIIIIIIII"
    header_size, section_size = 16 + struct.calcsize(header_format), struct.calcsize(section_format)
    table = (header_size + len(names) + 7) // 8 * 8
    osabi, abi_version = (0x41, 8) if expected.machine == EM_CUDA else (0, 0)
    ident = b"\x7fELF" + bytes([bits // 32, 2 if big else 1, 1, osabi, abi_version]) + bytes(7)
    header = struct.pack(header_format, expected.object_type, expected.machine or 0, 1, 0, 0, table,
                         _ABI_FLAGS.get(expected.machine, 0), header_size, 0, 0, section_size, 2, 1)
    sections = struct.pack(section_format, *[0] * 10) \
        + struct.pack(section_format, 1, 3, 0, 0, header_size, len(names), 0, 0, 1, 0)
    body = ident + header + names
    return body + bytes(table - len(body)) + sections


def compiled_object(triple: str, ir: str = KERNEL_IR) -> bytes:
    """LLVM's position-independent object of `ir` for `triple` (generic CPU)."""
    import llvmlite.binding as llvm

    from relax.runtime.kernels.host import initialize_llvm

    initialize_llvm()
    arch = triple.split("-")[0]
    features = "+m,+a,+f,+d,+c" if arch.startswith("riscv") else ""
    abi = {"riscv64": "lp64d", "riscv32": "ilp32d"}.get(arch, "")
    machine = llvm.Target.from_triple(triple).create_target_machine(
        cpu="generic", features=features, reloc="pic", codemodel="default", abiname=abi)
    module = llvm.parse_assembly(ir)
    module.triple = triple
    return machine.emit_object(module)
