"""Checks an Executable whole before anything of it runs.

Run on every loaded file and on every executable the ExecBuilder produces. It checks
the function table (names, kinds, instruction ranges laid out in table order), the
instruction offset table against the decoded instruction lengths, every register
against its function's register file, every constant and function index, every jump
target against its function's instructions, argument counts of calls to bytecode
functions, and the memory-scope map. The layout checks also make the executable
canonical: its listing assembles back to the same bytes.
"""

from __future__ import annotations

import re

from .binary import FormatError
from .builtin_args import BuiltinArgumentError, check_builtin_call
from .executable import Executable, FuncInfo
from .isa import (
    VM_REGISTER, VOID_REGISTER, ArgKind, DecodeError, FuncKind, Instruction, Opcode, decode_arg,
    decode_instruction, register_name,
)

MAX_REGISTERS = 1 << 20  # a register file is a Python list made at every call
# Each instruction writes at most one register, so a function can use no more registers
# than its arguments and instructions; a register file is bounded by that plus a margin
# (which also bounds the arguments of a function that does not name them). Without it
# a file of a few bytes makes every call build a huge register file.
REGISTER_MARGIN = 64
# Names appear bare in listings (`call  NAME in: ...`, `f[NAME]`), so they must not
# hold the characters that delimit them there.
_NAME = re.compile(r"[^\s,\[\]\";:=()]+")


class VerificationError(FormatError):
    """An executable that breaks a rule of the VM (from a file or from the builder)."""


def valid_function_name(name: str) -> bool:
    return bool(_NAME.fullmatch(name)) and name.isprintable()


def verify(exe: Executable) -> None:
    _verify_table(exe)
    _verify_offsets(exe)
    for info in exe.func_table:
        if info.kind == FuncKind.VM_FUNC:
            _verify_function(exe, info)
    for const_index, scope in exe.memory_scopes.items():
        if not 0 <= const_index < len(exe.constants):
            raise VerificationError(f"memory scope given for constant c[{const_index}], which does not exist")
        if not scope:
            raise VerificationError(f"empty memory scope for constant c[{const_index}]")
    for index, location in exe.source_locations.items():
        if not 0 <= index < len(exe.instr_offset):
            raise VerificationError(f"source location given for instruction {index}, which does not exist")
        if not location or not location.isprintable():
            raise VerificationError(f"bad source location {location!r} for instruction {index}")


def _verify_table(exe: Executable) -> None:
    seen: set[str] = set()
    next_instr = 0
    for info in exe.func_table:
        where = f"function '{info.name}'"
        if not valid_function_name(info.name):
            raise VerificationError(f"bad function name {info.name!r}")
        if info.name in seen:
            raise VerificationError(f"function '{info.name}' is defined twice")
        seen.add(info.name)
        if info.kind == FuncKind.PACKED_FUNC:
            if (info.start_instr, info.end_instr, info.num_args, info.register_file_size, info.param_names) != (
                    0, 0, -1, 0, ()):
                raise VerificationError(f"{where}: a packed function has no code, registers or parameters")
            continue
        if info.kind not in (FuncKind.VM_FUNC, FuncKind.VM_TIR_FUNC):
            raise VerificationError(f"{where}: unknown function kind {int(info.kind)}")
        if not 0 <= info.num_args <= MAX_REGISTERS:
            raise VerificationError(f"{where}: bad number of arguments {info.num_args}")
        if info.param_names and len(info.param_names) != info.num_args:
            raise VerificationError(
                f"{where}: {len(info.param_names)} parameter names for {info.num_args} arguments")
        if not info.num_args <= info.register_file_size <= MAX_REGISTERS:
            raise VerificationError(
                f"{where}: register file size {info.register_file_size} cannot hold {info.num_args} arguments")
        _verify_sizes(info, where)
        if info.kind == FuncKind.VM_TIR_FUNC:
            if info.start_instr != 0 or info.end_instr != 0:
                raise VerificationError(f"{where}: a compiled-TIR function has no bytecode")
            continue
        if info.start_instr != next_instr or info.end_instr <= info.start_instr:
            raise VerificationError(
                f"{where}: instructions [{info.start_instr}, {info.end_instr}) are not the next ones "
                f"after the previous function (expected to start at {next_instr}, with at least one)")
        next_instr = info.end_instr
    if next_instr != len(exe.instr_offset):
        raise VerificationError(
            f"the functions hold {next_instr} instructions but the bytecode has {len(exe.instr_offset)}")


def _verify_sizes(info: FuncInfo, where: str) -> None:
    """Register file and argument count within what the function's code and names can use."""
    if not info.param_names and info.num_args > REGISTER_MARGIN:
        raise VerificationError(f"{where}: {info.num_args} arguments without parameter names "
                                f"(at most {REGISTER_MARGIN}; name the parameters to take more)")
    instructions = max(info.end_instr - info.start_instr, 0)
    limit = info.num_args + instructions + REGISTER_MARGIN
    if info.register_file_size > limit:
        raise VerificationError(
            f"{where}: register file size {info.register_file_size} is more than its {info.num_args} "
            f"argument(s) and {instructions} instruction(s) can use (limit {limit}: arguments + "
            f"instructions + {REGISTER_MARGIN}; each instruction writes at most one register)")


def _verify_offsets(exe: Executable) -> None:
    position = 0
    for index, offset in enumerate(exe.instr_offset):
        if offset != position:
            raise VerificationError(f"instruction {index} is at word {offset}, expected word {position}")
        try:
            _, length = decode_instruction(exe.instr_data, offset)
        except DecodeError as error:
            raise VerificationError(f"instruction {index}: {error}") from None
        position += length
    if position != len(exe.instr_data):
        raise VerificationError(f"{len(exe.instr_data) - position} bytecode words belong to no instruction")


def _verify_function(exe: Executable, info: FuncInfo) -> None:
    for index in range(info.start_instr, info.end_instr):
        instr = exe.get_instruction(index)
        where = f"function '{info.name}', instruction {index - info.start_instr}"
        try:
            _verify_instruction(exe, info, index, instr)
        except (VerificationError, BuiltinArgumentError) as error:
            raise VerificationError(f"{where}: {error}") from None
    last = exe.get_instruction(info.end_instr - 1)
    if last.opcode not in (Opcode.RET, Opcode.GOTO):
        raise VerificationError(f"function '{info.name}' does not end with ret or goto")


def _verify_instruction(exe: Executable, info: FuncInfo, index: int, instr: Instruction) -> None:
    for name in instr.info.register_fields:
        register = instr.field(name)
        if name == "dst" and register == VOID_REGISTER:
            continue
        _check_register(register, info)
    for name in instr.info.offset_fields:
        target = index + instr.field(name)
        if not info.start_instr <= target < info.end_instr:
            raise VerificationError(
                f"jump by {instr.field(name)} lands outside the function "
                f"(at {target - info.start_instr}, function has {info.end_instr - info.start_instr})")
    if instr.opcode != Opcode.CALL:
        return
    func_index = instr.field("func_index")
    if not 0 <= func_index < len(exe.func_table):
        raise VerificationError(f"call to function index {func_index}, which does not exist")
    callee = exe.func_table[func_index]
    if callee.kind != FuncKind.PACKED_FUNC and len(instr.args) != callee.num_args:
        raise VerificationError(
            f"call to '{callee.name}' with {len(instr.args)} arguments, it takes {callee.num_args}")
    for word in instr.args:
        _check_arg(exe, info, word)
    if callee.kind == FuncKind.PACKED_FUNC:
        check_builtin_call(exe, callee.name, instr)


def _check_register(register: int, info: FuncInfo, allow_vm: bool = False) -> None:
    if allow_vm and register == VM_REGISTER:
        return
    if not 0 <= register < info.register_file_size:
        raise VerificationError(
            f"register {register_name(register)} is outside the register file (size {info.register_file_size})")


def _check_arg(exe: Executable, info: FuncInfo, word: int) -> None:
    kind, value = decode_arg(word)
    if kind == ArgKind.REGISTER:
        _check_register(value, info, allow_vm=True)
    elif kind == ArgKind.CONST_INDEX:
        if not 0 <= value < len(exe.constants):
            raise VerificationError(f"constant c[{value}] does not exist (pool has {len(exe.constants)})")
    elif kind == ArgKind.FUNC_INDEX:
        if not 0 <= value < len(exe.func_table):
            raise VerificationError(f"function index {value} does not exist")
    elif kind != ArgKind.IMMEDIATE:
        raise VerificationError(f"argument word {word:#x} has unknown kind {kind}")
