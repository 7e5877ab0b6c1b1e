"""The VM's instruction set as data: opcodes, argument words, special registers.

Everything that encodes, decodes, prints, assembles or verifies bytecode reads the
OPCODES table below instead of repeating it. An instruction is stored as 64-bit
words: the opcode, its fixed fields, and for Call a count followed by that many
argument words. Layouts follow TVM's Relax VM:

    Call  dst func_index num_args arg...   call a function, result in register dst
    Ret   result                           return the value of register result
    Goto  pc_offset                        pc += pc_offset
    If    cond false_offset                pc += 1 if register cond is nonzero else false_offset

An argument word holds its kind in bits 63..56 and a sign-extended value in bits
55..0: a register, an immediate integer, a constant-pool index or a function-table
index.
"""

from __future__ import annotations

import enum

from ...records import record

WORD_MIN = -(1 << 63)
WORD_MAX = (1 << 63) - 1
VALUE_BITS = 56
VALUE_MIN = -(1 << (VALUE_BITS - 1))
VALUE_MAX = (1 << (VALUE_BITS - 1)) - 1
_VALUE_MASK = (1 << VALUE_BITS) - 1

# Registers at and above 2^54 are special, as in TVM (Instruction::kBeginSpecialReg).
BEGIN_SPECIAL_REGISTER = 1 << 54
VOID_REGISTER = BEGIN_SPECIAL_REGISTER       # "no destination"
VM_REGISTER = BEGIN_SPECIAL_REGISTER + 1     # the VM itself, first argument of builtins that need it
SPECIAL_REGISTER_NAMES = {VOID_REGISTER: "void", VM_REGISTER: "vm"}


class ArgKind(enum.IntEnum):
    REGISTER = 0
    IMMEDIATE = 1
    CONST_INDEX = 2
    FUNC_INDEX = 3


class FuncKind(enum.IntEnum):
    """VMFuncInfo::FuncKind."""

    PACKED_FUNC = 0   # resolved by name from imports or the global registry
    VM_FUNC = 1       # bytecode run by the interpreter
    VM_TIR_FUNC = 2   # a Relax function compiled to one kernel, found as __vmtir__<name>


class Opcode(enum.IntEnum):
    CALL = 1
    RET = 2
    GOTO = 3
    IF = 4


@record
class OpcodeInfo:
    opcode: Opcode
    mnemonic: str              # as TVM's as_text prints it
    fields: tuple[str, ...]    # fixed words after the opcode, in stored order
    register_fields: tuple[str, ...]  # those fields that name a register
    offset_fields: tuple[str, ...]    # those fields that are relative jump offsets
    variadic: bool             # a count word then that many argument words follow
    # The listing line after the mnemonic (padded to 6), TVM's as_text layout: listing.py
    # prints it and the assembler reads it back. {args} stands for the argument words.
    layout: str


OPCODES: dict[int, OpcodeInfo] = {
    info.opcode: info
    for info in (
        OpcodeInfo(Opcode.CALL, "call", ("dst", "func_index"), ("dst",), (), True,
                   "{func_index:<16} in: {args:<12} dst: {dst}"),
        OpcodeInfo(Opcode.RET, "ret", ("result",), ("result",), (), False, "{result}"),
        OpcodeInfo(Opcode.GOTO, "goto", ("pc_offset",), (), ("pc_offset",), False, "{pc_offset}"),
        OpcodeInfo(Opcode.IF, "If", ("cond", "false_offset"), ("cond",), ("false_offset",), False,
                   "{cond}, {false_offset}"),
    )
}
BY_MNEMONIC: dict[str, OpcodeInfo] = {info.mnemonic: info for info in OPCODES.values()}


@record
class Instruction:
    """One decoded instruction; `fields` follow OPCODES[opcode].fields, `args` are argument words."""

    opcode: Opcode
    fields: tuple[int, ...]
    args: tuple[int, ...] = ()

    @property
    def info(self) -> OpcodeInfo:
        return OPCODES[self.opcode]

    def field(self, name: str) -> int:
        return self.fields[self.info.fields.index(name)]

    def words(self) -> list[int]:
        words = [int(self.opcode), *self.fields]
        if self.info.variadic:
            words.append(len(self.args))
            words.extend(self.args)
        return words


def call(func_index: int, args, dst: int = VOID_REGISTER) -> Instruction:
    return Instruction(Opcode.CALL, (dst, func_index), tuple(args))


def ret(result: int) -> Instruction:
    return Instruction(Opcode.RET, (result,))


def goto(pc_offset: int) -> Instruction:
    return Instruction(Opcode.GOTO, (pc_offset,))


def if_(cond: int, false_offset: int) -> Instruction:
    return Instruction(Opcode.IF, (cond, false_offset))


class DecodeError(ValueError):
    """Words that are not an instruction; the verifier turns this into a file error."""


def decode_instruction(data, offset: int) -> tuple[Instruction, int]:
    """The instruction starting at data[offset] and the number of words it takes."""
    if offset >= len(data):
        raise DecodeError("instruction starts past the end of the bytecode")
    opcode = data[offset]
    info = OPCODES.get(opcode)
    if info is None:
        raise DecodeError(f"unknown opcode {opcode}")
    end = offset + 1 + len(info.fields)
    if end > len(data):
        raise DecodeError(f"{info.mnemonic} instruction runs past the end of the bytecode")
    fields = tuple(data[offset + 1:end])
    args: tuple[int, ...] = ()
    if info.variadic:
        if end >= len(data):
            raise DecodeError(f"{info.mnemonic} instruction runs past the end of the bytecode")
        count = data[end]
        if count < 0 or end + 1 + count > len(data):
            raise DecodeError(f"{info.mnemonic} instruction has a bad argument count {count}")
        args = tuple(data[end + 1:end + 1 + count])
        end += 1 + count
    return Instruction(Opcode(opcode), fields, args), end - offset


# ---- argument words ----------------------------------------------------------------

def encode_arg(kind: ArgKind, value: int) -> int:
    if not VALUE_MIN <= value <= VALUE_MAX:
        raise ValueError(f"value {value} does not fit in the 56 bits of an argument word")
    word = (int(kind) << VALUE_BITS) | (value & _VALUE_MASK)
    return word - (1 << 64) if word > WORD_MAX else word


def decode_arg(word: int) -> tuple[int, int]:
    """(kind, value) of an argument word; the kind may be out of ArgKind's range."""
    unsigned = word & ((1 << 64) - 1)
    kind = unsigned >> VALUE_BITS
    value = unsigned & _VALUE_MASK
    if value >> (VALUE_BITS - 1):
        value -= 1 << VALUE_BITS
    return kind, value


def is_special_register(register: int) -> bool:
    return register in SPECIAL_REGISTER_NAMES


def register_name(register: int) -> str:
    """`%3`, `%void`, `%vm` as TVM's listings print them."""
    special = SPECIAL_REGISTER_NAMES.get(register)
    return f"%{special}" if special else f"%{register}"
