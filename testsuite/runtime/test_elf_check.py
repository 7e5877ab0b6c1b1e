"""relax.runtime.kernels.elf_check: a kernel object's native code is checked before LLVM sees it.

A well-formed object of each architecture passes; each kind of damage is refused with
its own message; random damage to a real object gives either acceptance or an
ObjectError, never another exception.
"""

import hashlib
import random
import struct

import pytest

from elf_objects import compiled_object, minimal_object
from relax.diagnostics import UserError
from relax.runtime.kernels import container
from relax.runtime.kernels.elf_check import ObjectError, check_object
from relax.runtime.kernels.metadata import KernelInfo

X86 = "x86_64-linux-gnu"


@pytest.fixture(scope="module")
def obj() -> bytes:
    """LLVM's object for a small kernel: .text with a PC32 and a PLT32 relocation, .rodata,
    .eh_frame, six symbols (4: the kernel, 5: expf, undefined)."""
    return compiled_object(X86)


def _sections(data: bytes) -> dict:
    """Name -> (header offset, sh_offset, sh_size) of an ELF64 little-endian object."""
    table, = struct.unpack_from("<Q", data, 0x28)
    count, names = struct.unpack_from("<HH", data, 0x3C)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, table + 64 * index) for index in range(count)]
    strings = headers[names][4]
    found = {}
    for index, header in enumerate(headers):
        start = strings + header[0]
        found[data[start:data.index(b"\0", start)].decode()] = (table + 64 * index, header[4], header[5])
    return found


def _put(data: bytes, at: int, fmt: str, value: int) -> bytes:
    return data[:at] + struct.pack("<" + fmt, value) + data[at + struct.calcsize(fmt):]


def _section_field(name: str, field: int, fmt: str, value: int):
    return lambda d: _put(d, _sections(d)[name][0] + field, fmt, value)


def _entry(section: str, index: int, field: int, fmt: str, value: int, size: int = 24):
    return lambda d: _put(d, _sections(d)[section][1] + size * index + field, fmt, value)


DAMAGE = {
    "truncated header": (lambda d: d[:40], r"shorter than an ELF64 header \(truncated\)"),
    "truncated": (lambda d: d[:len(d) // 2], r"section table .* runs past the end of the object"),
    "bad magic": (lambda d: b"\x7fELG" + d[4:], "bad ELF magic number"),
    "wrong machine": (lambda d: _put(d, 18, "H", 183), "ELF machine 183, the target's is 62"),
    "wrong class": (lambda d: d[:4] + b"\x01" + d[5:], "ELF32 little-endian, the target's code is ELF64"),
    "not relocatable": (lambda d: _put(d, 16, "H", 3), "ELF type 3, expected a relocatable object"),
    "section table out of file": (lambda d: _put(d, 0x28, "Q", len(d)), r"section table .* runs past the end"),
    "section out of file": (_section_field(".text", 24, "Q", 1 << 40), r"section 2 .* runs past the end"),
    "bad strtab index": (lambda d: _put(d, 0x3E, "H", 2), "section name table index 2 is not a string table"),
    "strtab index out of range": (lambda d: _put(d, 0x3E, "H", 99), "index 99 is not a string table"),
    "unterminated strtab": (lambda d: _put(d, sum(_sections(d)[".strtab"][1:]) - 1, "B", 65), "not NUL-delimited"),
    "section name out of range": (_section_field(".text", 0, "I", 1 << 20), "name of section 2 lies outside"),
    "bad alignment": (_section_field(".text", 48, "Q", 3), "alignment 3, not a power of two"),
    "thread-local section": (_section_field(".text", 8, "Q", 0x406), "thread-local or unknown"),
    "dynamic section type": (_section_field(".text", 4, "I", 11), "type 0xb, which has no place"),
    "symbol entry size": (_section_field(".symtab", 56, "Q", 16), "entry size 16"),
    "symbol name out of range": (_entry(".symtab", 4, 0, "I", 1 << 20), "symbol 4's name lies outside"),
    "symbol section out of range": (_entry(".symtab", 4, 6, "H", 50), "symbol 4 names section 50"),
    "symbol past its section": (_entry(".symtab", 4, 8, "Q", 1 << 20), "past the end of its section"),
    "unnamed global": (_entry(".symtab", 4, 0, "I", 0), "global symbol 4 has no name"),
    "thread-local symbol": (_entry(".symtab", 4, 4, "B", 0x16), "binding 1 and type 6"),
    "absolute symbol": (_entry(".symtab", 4, 6, "H", 0xFFF1), "file symbols are absolute, and only they"),
    "common symbol unaligned": (_entry(".symtab", 5, 6, "H", 0xFFF2), "common symbol 5 has alignment 0"),
    "locals out of order": (_entry(".symtab", 5, 4, "B", 0), "breaks the order of local then global"),
    "relocation symbol out of range": (_entry(".rela.text", 0, 12, "I", 6), "names symbol 6, the symbol table has 6"),
    "relocation offset out of section": (_entry(".rela.text", 0, 0, "Q", 0x13), "patches offset 19, outside"),
    "relocation type unknown": (_entry(".rela.text", 0, 8, "I", 3), "type 3, which the loader does not apply"),
    "relocation addend far": (_entry(".rela.text", 0, 16, "q", 1 << 40), "outside it"),
    "relocation field not zero": (lambda d: _put(d, _sections(d)[".text"][1] + 4, "I", 7), "not zero"),
    "relocation to no symbol": (_entry(".rela.text", 0, 12, "I", 0), "refers to no symbol"),
    "relocation to a file symbol": (_entry(".rela.text", 0, 12, "I", 1), "refers to file symbol 1"),
    "PC32 to an external symbol": (_entry(".rela.text", 1, 8, "I", 2), "32-bit PC-relative reference to an external"),
    "relocation link": (_section_field(".rela.text", 40, "I", 1), "links to section 1, not the symbol table"),
    "relocation target": (_section_field(".rela.text", 44, "I", 0), "applies to section 0"),
    "eh_frame length": (_entry(".eh_frame", 0, 0, "I", 0x1000, 0), "record at 0 has a length outside"),
}


def test_llvm_object_passes(obj):
    check_object(obj, X86)


@pytest.mark.parametrize("name", DAMAGE)
def test_damage_is_refused_with_its_message(obj, name):
    damage, message = DAMAGE[name]
    with pytest.raises(ObjectError, match=message):
        check_object(damage(obj), X86)


@pytest.mark.parametrize("triple", ["aarch64-linux-gnu", "riscv64-linux-gnu", "riscv32-linux-gnu", "i686-linux-gnu",
                                    "armv7-linux-gnueabihf", "powerpc64-linux-gnu"])
def test_llvm_objects_of_other_architectures_pass(triple):
    check_object(compiled_object(triple), triple)
    check_object(minimal_object(triple), triple)


def test_machine_class_and_abi_follow_the_triple():
    with pytest.raises(ObjectError, match="ELF machine 183, the target's is 62"):
        check_object(minimal_object("aarch64-linux-gnu"), X86)
    with pytest.raises(ObjectError, match="ELF32 little-endian, the target's code is ELF64"):
        check_object(minimal_object("riscv32-linux-gnu"), "riscv64-linux-gnu")
    soft_float = _put(minimal_object("riscv64-linux-gnu"), 0x30, "I", 0x1)
    with pytest.raises(ObjectError, match="float ABI is soft-float"):
        check_object(soft_float, "riscv64-linux-gnu")
    old_eabi = struct.pack("<I", 0x04000000).join(minimal_object("armv7-linux-gnueabihf").rsplit(
        struct.pack("<I", 0x05000000), 1))
    with pytest.raises(ObjectError, match="EABI version 4"):
        check_object(old_eabi, "armv7-linux-gnueabihf")


def test_cubins_and_other_object_formats():
    check_object(minimal_object("nvptx64-nvidia-cuda"), "nvptx64-nvidia-cuda", "cubin")
    with pytest.raises(ObjectError, match=r"ELF type 1, expected an executable \(cubin\)"):
        check_object(_put(minimal_object("nvptx64-nvidia-cuda"), 16, "H", 1), "nvptx64-nvidia-cuda", "cubin")
    check_object(compiled_object("x86_64-apple-darwin"), "x86_64-apple-darwin", "macho")
    with pytest.raises(ObjectError, match="not a Mach-O object"):
        check_object(minimal_object(X86), "x86_64-apple-darwin", "macho")
    with pytest.raises(ObjectError, match="COFF machine 0xaa64, expected 0x8664"):
        check_object(compiled_object("aarch64-pc-windows-msvc"), "x86_64-pc-windows-msvc", "coff")
    with pytest.raises(ObjectError, match="object format 'coff', a x86_64-linux-gnu target's is 'elf'"):
        check_object(b"\x64\x86" + bytes(30), X86, "coff")


def _kernel_object(native, parts=(), symbol="relaxk_k"):
    target = container.TargetEntry(X86, "generic", "")
    kernel = KernelInfo.from_json({"name": "k", "symbol": symbol, "abi_version": 1, "params": [],
                                   "symbolic_vars": [], "workspace_bytes": 0, "parallel": False, "noalias": False,
                                   "writes": [], "ret_dtype": "", "attrs": {}})
    data = bytearray(container.write(container.KernelObject((target,), (kernel,), {0: native}, {0: b"BC"},
                                                             parts={0: tuple((part, b"BC") for part in parts)}
                                                             if parts else {})))
    # Written as format 0.4 (checksum recomputed): these hand-made objects carry no kernel
    # signatures, which 0.5 requires (test_kernel_signatures.py); the ELF checks are the same.
    struct.pack_into("<HH", data, 8, *container.CODE_HASHES_FORMAT_VERSION)
    data[24:56] = hashlib.sha256(bytes(data[56:])).digest()
    return bytes(data)


def test_the_container_names_file_target_and_part(obj):
    assert container.read(_kernel_object(obj), "m.ko").objects[0] == obj
    with pytest.raises(UserError, match=r"^'m.ko' is not a valid kernel object: the native object of target 0 "
                                        r"\(x86_64-linux-gnu\) is malformed: bad ELF magic number"):
        container.read(_kernel_object(b"\x7fELG" + obj[4:]), "m.ko")
    with pytest.raises(UserError, match=r"target 0 \(x86_64-linux-gnu\), part 2 of 2, is malformed: .*\(truncated\)"):
        container.read(_kernel_object(obj, parts=[obj[:30]]), "m.ko")


TWO_FUNCTIONS_IR = """
define i32 @relaxk_a(i32 %x) {
  %y = mul i32 %x, %x
  %z = add i32 %y, 7
  ret i32 %z
}
define i32 @relaxk_b(i32 %x) {
  %y = add i32 %x, 3
  ret i32 %y
}
"""


@pytest.fixture(scope="module")
def two_functions() -> bytes:
    """.text holds relaxk_a (symbol 3, [0, 7)) and relaxk_b (symbol 4, [16, 20)); section 4 is .eh_frame."""
    return compiled_object(X86, TWO_FUNCTIONS_IR)


FUNCTION_DAMAGE = {
    # A symbol's st_value moved into another function (the .ko resealed) passed relaxld, and
    # relaxrun died by SIGILL (issue 16).
    "moved into another function": (_entry(".symtab", 4, 8, "Q", 3),
                                    r"function symbols 3 and 4 overlap in section 2: \[0, 7\) and \[3, 7\)"),
    "past its section": (_entry(".symtab", 4, 16, "Q", 100), r"function symbol 4 spans \[16, 116\), past the end"),
    "in a data section": (_entry(".symtab", 4, 6, "H", 4), "function symbol 4 is defined in section 4, which is not "
                                                           "executable"),
}


@pytest.mark.parametrize("name", FUNCTION_DAMAGE)
def test_function_symbols_lie_in_their_executable_section_without_overlap(two_functions, name):
    check_object(two_functions, X86)
    damage, message = FUNCTION_DAMAGE[name]
    with pytest.raises(ObjectError, match=message):
        check_object(damage(two_functions), X86)


def test_aliases_of_one_function_are_not_an_overlap(two_functions):
    alias = _entry(".symtab", 4, 16, "Q", 7)(_entry(".symtab", 4, 8, "Q", 0)(two_functions))
    check_object(alias, X86)


def test_kernel_entry_symbols_are_defined_functions_of_nonzero_size(two_functions):
    container.read(_kernel_object(two_functions, symbol="relaxk_a"), "m.ko")
    with pytest.raises(UserError, match=r"^'m.ko' is not a valid kernel object: target 0 \(x86_64-linux-gnu\): kernel "
                                        r"'k' has entry symbol 'relaxk_c', which the native code does not define"):
        container.read(_kernel_object(two_functions, symbol="relaxk_c"), "m.ko")
    empty = _entry(".symtab", 3, 16, "Q", 0)(two_functions)
    with pytest.raises(UserError, match="the entry symbol 'relaxk_a' of kernel 'k' has size 0"):
        container.read(_kernel_object(empty, symbol="relaxk_a"), "m.ko")
    # in another part of the target
    container.read(_kernel_object(compiled_object(X86), parts=[two_functions], symbol="relaxk_b"), "m.ko")


def _mutated(rng: random.Random, data: bytes) -> bytes:
    """Bit flips, edge values written over 1 to 8 bytes, or a cut."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data))
        choice = rng.random()
        if choice < 0.4:
            data[at] ^= 1 << rng.randrange(8)
        elif choice < 0.9:
            width = rng.choice((1, 2, 4, 8))
            value = rng.choice((0, 1, 2, 0x7F, 0xFF, 0x7FFF, 0xFFFF, 1 << 31, (1 << 32) - 1, 1 << 63, len(data)))
            data[at:at + width] = (value % (1 << 8 * width)).to_bytes(width, "little")
        else:
            del data[at:]
            if not data:
                break
    return bytes(data)


def test_random_damage_is_refused_or_accepted_never_an_error(obj):
    rng = random.Random(16)
    refused = 0
    for _ in range(1500):
        try:
            check_object(_mutated(rng, obj), X86)
        except ObjectError:
            refused += 1
    assert 0 < refused < 1500
    for _ in range(100):  # through the container: a UserError naming the file
        try:
            container.read(_kernel_object(_mutated(rng, obj)), "m.ko")
        except UserError as exc:
            assert str(exc).startswith("'m.ko' is not a valid kernel object")
