"""Listings of an Executable: as_text (TVM's layout plus what it leaves out), as_python, stats.

as_text prints the functions exactly as TVM's Executable::AsText does, so that a
listing diffs against TVM's, then three sections TVM does not print and without which
the listing could not be assembled back into the same file:

    .functions        @name num_inputs=N registers=R params=["x", "y"]
    .memory_scopes    c[i] "scope"
    .constants        c[i] = <constant>      (constant_text.py)
    .source_locations name+0004 "model.relax:7:5"

as_python prints an ExecBuilder program that rebuilds the same bytes when run.
"""

from __future__ import annotations

import base64
import json
import math
import struct

import numpy as np

from ...runtime.dtype import DataType
from ...runtime.objects import ShapeTuple
from .constant_text import format_constant
from .executable import Executable, FuncInfo
from .isa import VM_REGISTER, VOID_REGISTER, ArgKind, FuncKind, Instruction, Opcode, decode_arg, register_name


# ---- as_text -------------------------------------------------------------------------------

def format_arg(exe: Executable, word: int) -> str:
    kind, value = decode_arg(word)
    if kind == ArgKind.REGISTER:
        return register_name(value)
    if kind == ArgKind.IMMEDIATE:
        return f"i{value}"
    if kind == ArgKind.CONST_INDEX:
        return f"c[{value}]"
    if kind == ArgKind.FUNC_INDEX:
        return f"f[{_func_name(exe, value)}]"
    return f"<bad kind {kind}>"


def _func_name(exe: Executable, index: int) -> str:
    if 0 <= index < len(exe.func_table):
        return exe.func_table[index].name
    return f"unknown_func_index({index})"


def format_instruction(exe: Executable, instr: Instruction) -> str:
    """One instruction line as TVM prints it, without the two leading spaces: the opcode
    table's mnemonic and layout (isa.OPCODES)."""
    info = instr.info
    values = {}
    for name, value in zip(info.fields, instr.fields):
        if name in info.register_fields:
            values[name] = register_name(value)
        elif name == "func_index":
            values[name] = _func_name(exe, value)
        else:
            values[name] = value
    if info.variadic:
        values["args"] = ", ".join(format_arg(exe, word) for word in instr.args)
    return f"{info.mnemonic:<6}" + info.layout.format(**values)


def function_text(exe: Executable, info: FuncInfo) -> str:
    if info.kind == FuncKind.PACKED_FUNC:
        return f"@{info.name} packed_func;\n\n"
    if info.kind == FuncKind.VM_TIR_FUNC:
        return f"@{info.name} num_inputs={info.num_args} vm_tir_func;\n\n"
    lines = [f"@{info.name}:\n"]
    for instr in exe.instructions(info):
        lines.append(f"  {format_instruction(exe, instr)}\n")
    lines.append("\n")
    return "".join(lines)


def function_metadata(info: FuncInfo) -> str:
    params = json.dumps(list(info.param_names))  # ASCII: a listing line never splits
    return f"  @{info.name} num_inputs={info.num_args} registers={info.register_file_size} params={params}\n"


def as_text(exe: Executable, func: str | None = None) -> str:
    """The listing; with `func`, only that function's block (not reassemblable)."""
    if func is not None:
        return "".join(function_text(exe, info) for info in exe.func_table if info.name == func)
    parts = [function_text(exe, info) for info in exe.func_table]
    metadata = [function_metadata(info) for info in exe.func_table if info.kind != FuncKind.PACKED_FUNC]
    if metadata:
        parts.append(".functions\n")
        parts.extend(metadata)
    if exe.memory_scopes:
        parts.append(".memory_scopes\n")
        parts.extend(f"  c[{index}] {json.dumps(scope)}\n" for index, scope in sorted(exe.memory_scopes.items()))
    if exe.constants:
        parts.append(".constants\n")
        parts.extend(f"  c[{index}] = {format_constant(value)}\n" for index, value in enumerate(exe.constants))
    if exe.py_functions:
        from .py_functions import listing_lines

        parts.append(".py_functions\n")
        parts.extend(listing_lines(exe.py_functions))
    if exe.source_locations:
        parts.append(".source_locations\n")
        for info in exe.func_table:
            for index in range(info.start_instr, info.end_instr):
                if index in exe.source_locations:
                    parts.append(f"  {instruction_address(info, index)} {json.dumps(exe.source_locations[index])}\n")
    return "".join(parts)


def instruction_address(info: FuncInfo, index: int) -> str:
    """`main+0004`: a function and the position of an instruction in it."""
    return f"{info.name}+{index - info.start_instr:04d}"


# ---- stats ---------------------------------------------------------------------------------

def _stats_constant(value) -> str:
    if isinstance(value, np.ndarray):
        return "scalar" if value.ndim == 0 else "[" + ", ".join(str(v) for v in value.shape) + "]"
    if isinstance(value, ShapeTuple):
        return "shapetuple[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return f"tuple({len(value)})"
    if value is None:
        return "null"
    return str(value)


def stats(exe: Executable) -> str:
    """TVM's Executable::Stats text."""
    pool = ", ".join(_stats_constant(value) for value in exe.constants)
    names = ", ".join(info.name for info in exe.func_table)
    return (
        "Relax VM executable statistics:\n"
        f"  Constant pool (# {len(exe.constants)}): [{pool}]\n"
        f"  Globals (#{len(exe.func_table)}): [{names}]\n"
    )


# ---- as_python -----------------------------------------------------------------------------

_KIND_NAMES = {FuncKind.PACKED_FUNC: "packed_func", FuncKind.VM_FUNC: "vm_func", FuncKind.VM_TIR_FUNC: "vm_tir_func"}


def _py_arg(exe: Executable, word: int) -> str:
    kind, value = decode_arg(word)
    if kind == ArgKind.REGISTER:
        return "ib.r(vm)" if value == VM_REGISTER else f"ib.r({value})"
    if kind == ArgKind.IMMEDIATE:
        return f"ib.imm({value})"
    if kind == ArgKind.CONST_INDEX:
        return f"ib.c({value})"
    return f"ib.f({_py_str(_func_name(exe, value))})"


def _py_str(text: str) -> str:
    """An exact Python literal, double-quoted like TVM's as_python when that needs no escape."""
    literal = repr(text)
    if literal.startswith("'") and '"' not in text:
        literal = '"' + literal[1:-1] + '"'
    return literal


def _py_float(value: float) -> str:
    if math.isfinite(value):
        return repr(value)
    if math.isnan(value) and struct.pack("<d", value) != struct.pack("<d", float("nan")):
        return f"struct.unpack('<d', bytes.fromhex('{struct.pack('<d', value).hex()}'))[0]"
    return f"float('{value!r}')"


def py_constant(value) -> str:
    """A Python expression that evaluates to exactly this constant."""
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    if isinstance(value, float):
        return _py_float(value)
    if isinstance(value, str):
        return _py_str(value)
    if isinstance(value, DataType):
        return f"DataType({value.code}, {value.bits}, {value.lanes})"
    if isinstance(value, ShapeTuple):
        return f"ShapeTuple({list(value)})"
    if isinstance(value, np.ndarray):
        dtype = value.dtype.str
        if value.size <= 64 and (value.dtype.kind in "biu" or np.isfinite(value).all()):
            rebuilt = np.array(value.tolist(), dtype=value.dtype)
            if rebuilt.tobytes() == value.tobytes():
                return f"np.array({value.tolist()!r}, dtype={dtype!r}).reshape({value.shape!r})"
        data = base64.b64encode(value.tobytes()).decode("ascii")
        return f"np.frombuffer(base64.b64decode({data!r}), dtype={dtype!r}).reshape({value.shape!r})"
    return "(" + "".join(f"{py_constant(item)}, " for item in value) + ")"


def _py_instruction(exe: Executable, instr: Instruction) -> str:
    if instr.opcode == Opcode.CALL:
        args = ", ".join(_py_arg(exe, word) for word in instr.args)
        dst = instr.field("dst")
        tail = "" if dst == VOID_REGISTER else f", dst=ib.r({dst})"
        return f"ib.emit_call({_py_str(_func_name(exe, instr.field('func_index')))}, args=[{args}]{tail})"
    if instr.opcode == Opcode.RET:
        return f"ib.emit_ret(ib.r({instr.field('result')}))"
    if instr.opcode == Opcode.GOTO:
        return f"ib.emit_goto({instr.field('pc_offset')})"
    return f"ib.emit_if(ib.r({instr.field('cond')}), {instr.field('false_offset')})"


def as_python(exe: Executable) -> str:
    lines = [
        "import base64",
        "import struct",
        "",
        "import numpy as np",
        "",
        "from relax.runtime import DataType, ShapeTuple",
        "from relax.vm import ExecBuilder",
        "",
        'vm = "vm"',
        "ib = ExecBuilder()",
    ]
    for info in exe.func_table:
        if info.kind == FuncKind.VM_TIR_FUNC:
            lines.append(f"ib.declare_function({_py_str(info.name)}, kind=\"vm_tir_func\", "
                         f"num_inputs={info.num_args}, param_names={list(info.param_names)!r}, "
                         f"register_file_size={info.register_file_size})")
        else:
            lines.append(f"ib.declare_function({_py_str(info.name)}, kind=\"{_KIND_NAMES[info.kind]}\")")
    for value in exe.constants:
        lines.append(f"ib.add_constant({py_constant(value)})")
    for index, scope in sorted(exe.memory_scopes.items()):
        lines.append(f"ib.set_memory_scope(ib.c({index}), {_py_str(scope)})")
    for info in exe.func_table:
        if info.kind != FuncKind.VM_FUNC:
            continue
        lines.append(f"with ib.function({_py_str(info.name)}, num_inputs={info.num_args}, "
                     f"param_names={list(info.param_names)!r}, register_file_size={info.register_file_size}):")
        location = None
        for index in range(info.start_instr, info.end_instr):
            if exe.source_locations.get(index) != location:
                location = exe.source_locations.get(index)
                lines.append(f"    ib.set_source_location({None if location is None else _py_str(location)})")
            lines.append(f"    {_py_instruction(exe, exe.get_instruction(index))}")
    lines.append("exe = ib.get()")
    return "\n".join(lines) + "\n"
