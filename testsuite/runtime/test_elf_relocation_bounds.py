"""What a relocation may reach: the addends LLVM writes pass, steered ones are refused.

A fuzzed .ko (checksums recomputed) turned the addend of a call to `expf` from -4 into
0xffff: within the old 64 KiB slack, so relaxld accepted it and relaxrun died by SIGSEGV
when RuntimeDyld's patched call jumped into the middle of nowhere (issue 16).
"""

import pytest

from elf_objects import compiled_object
from relax.runtime.kernels.elf_check import ObjectError, check_object
from test_elf_check import X86, _entry

ARM = "aarch64-linux-gnu"

# A switch LLVM lowers to a jump table: on x86-64, .rodata entries `.LBB - .LJTI` are
# PC32 relocations against .text whose addends point past its end by their own offset.
SWITCH_IR = """
declare void @g(ptr)
define void @relaxk_s(i32 %x, ptr %p) {
entry:
  switch i32 %x, label %d [ i32 0, label %a  i32 1, label %b  i32 2, label %c  i32 3, label %e  i32 4, label %f ]
a:
  store i32 3, ptr %p
  ret void
b:
  call void @g(ptr %p)
  ret void
c:
  store i32 7, ptr %p
  call void @g(ptr %p)
  ret void
e:
  store i32 9, ptr %p
  ret void
f:
  store i32 11, ptr %p
  call void @g(ptr %p)
  ret void
d:
  ret void
}
"""


@pytest.fixture(scope="module")
def x86_object() -> bytes:
    """.rela.text: 0 is PC32 to .rodata (32 bytes) - 4, 1 is PLT32 to expf (symbol 5) - 4."""
    return compiled_object(X86)


@pytest.mark.parametrize("triple", [X86, ARM])
def test_llvm_jump_tables_and_calls_pass(triple):
    check_object(compiled_object(triple, SWITCH_IR), triple)


@pytest.mark.parametrize("damage, message", [
    (_entry(".rela.text", 1, 16, "q", 0xFFFF), "calls symbol 5 with addend 65535, which lands inside the function "
                                               r"\(LLVM writes -4\)"),
    (_entry(".rela.text", 1, 16, "q", -3), "calls symbol 5 with addend -3"),
    # a GOT-relative load of expf's address, 256 bytes on
    (lambda d: _entry(".rela.text", 1, 8, "I", 9)(_entry(".rela.text", 1, 16, "q", 0x100)(d)),
     r"has addend 256 to symbol 5 of 0 bytes \(from -8, a PC-relative bias, to 0\)"),
    (_entry(".rela.text", 0, 16, "q", 33), r"points 33 bytes into section 4 \(32 bytes\), outside it"),
    (_entry(".rela.text", 0, 16, "q", -9), r"points -9 bytes into section 4"),
])
def test_x86_64_addends_that_leave_their_target_are_refused(x86_object, damage, message):
    check_object(x86_object, X86)
    with pytest.raises(ObjectError, match=message):
        check_object(damage(x86_object), X86)


def test_aarch64_call_addend_is_zero():
    obj = compiled_object(ARM)
    check_object(obj, ARM)
    # .rela.text: 0 and 1 address .rodata (ADR_PREL_PG_HI21, ADD_ABS_LO12_NC), 2 is CALL26 to expf
    with pytest.raises(ObjectError, match=r"calls symbol 8 with addend 4096, .*\(LLVM writes 0\)"):
        check_object(_entry(".rela.text", 2, 16, "q", 4096)(obj), ARM)
    with pytest.raises(ObjectError, match=r"points 64 bytes into section 4 \(32 bytes\), outside it"):
        check_object(_entry(".rela.text", 0, 16, "q", 64)(obj), ARM)
