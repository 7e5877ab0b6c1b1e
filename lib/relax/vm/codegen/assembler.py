"""The assembler: a .vmasm listing (what as_text prints) back into an Executable.

A listing printed by as_text assembles into an executable whose .vmo bytes are
identical to the original's. Syntax errors are DiagnosticErrors pointing at the line
and column; a listing that parses but breaks a rule of the VM is refused by the
verifier, as a loaded file would be.
"""

from __future__ import annotations

import json
import re

from ...diagnostics import SOURCES, DiagnosticError, Diagnostic, Span
from ..bytecode.constant_text import ConstantSyntaxError, parse_constant
from ..bytecode.executable import Executable, FuncInfo
from ..bytecode.isa import BY_MNEMONIC, VM_REGISTER, VOID_REGISTER, ArgKind, FuncKind, Instruction, encode_arg
from ..bytecode.verifier import verify

_PACKED = re.compile(r"@(\S+) packed_func;")
_TIR = re.compile(r"@(\S+) num_inputs=(\d+) vm_tir_func;")
_BYTECODE = re.compile(r"@(\S+):")
_METADATA = re.compile(r"@(\S+) num_inputs=(\d+) registers=(\d+) params=(\[.*\])")
_SCOPE = re.compile(r"c\[(\d+)\] (\".*\")")
_CONSTANT = re.compile(r"c\[(\d+)\] = ")
_LOCATION = re.compile(r"(\S+)\+(\d+) (\".*\")")
_REGISTER = re.compile(r"%(\d+|vm|void)")
_INT = re.compile(r"-?\d+")


class _Line:
    def __init__(self, source: str, number: int, text: str):
        self.source, self.number, self.text = source, number, text

    def error(self, message: str, column: int | None = None) -> DiagnosticError:
        if column is None:
            column = len(self.text) - len(self.text.lstrip()) + 1
        return DiagnosticError([Diagnostic("error", message, Span(self.source, self.number, column))])

    def integer(self, text: str) -> int:
        """The decimal `text` of this line as a 64-bit integer, else an error at it. The
        digits are counted before int() reads them: Python refuses to convert more than 4300."""
        if len(text.lstrip("-").lstrip("0")) <= 19 and -(1 << 63) <= (value := int(text)) < 1 << 63:
            return value
        shown = text if len(text) <= 24 else f"{text[:20]}... ({len(text)} digits)"
        raise self.error(f"{shown} does not fit in 64 bits", self.text.find(text) + 1)


class _Function:
    def __init__(self, line: _Line, kind: FuncKind, name: str, num_args: int = -1):
        self.line, self.kind, self.name, self.num_args = line, kind, name, num_args
        self.body: list[_Line] = []
        self.metadata: tuple[int, int, tuple[str, ...]] | None = None


def assemble(text: str, source: str = "<listing>") -> Executable:
    SOURCES.add(source, text)
    lines = [_Line(source, number, raw) for number, raw in enumerate(text.splitlines(), start=1)]
    functions: list[_Function] = []
    locations: list[tuple[_Line, str]] = []
    exe = Executable()
    # What a line of each section adds: the code first, then the sections after their headers.
    readers = {
        "code": lambda line, stripped: _code_line(line, stripped, functions),
        "functions": lambda line, stripped: _metadata_line(line, stripped, functions),
        "memory_scopes": lambda line, stripped: _scope_line(line, stripped, exe),
        "constants": lambda line, stripped: _constant_line(line, stripped, exe),
        "py_functions": lambda line, stripped: _py_function_line(line, stripped, exe),
        "source_locations": lambda line, stripped: locations.append((line, stripped)),
    }
    section = "code"
    for line in lines:
        stripped = line.text.strip()
        if stripped.startswith(".") and stripped[1:] in readers and stripped != ".code":
            section = stripped[1:]
        elif stripped:
            readers[section](line, stripped)
    names = {function.name: index for index, function in enumerate(functions)}
    code, problems = {}, []
    for function in functions:
        # Every instruction line is read before anything else is judged, so that all the
        # independent mistakes of a listing are reported together.
        for line in function.body:
            try:
                code[id(line)] = _instruction(line, names)
            except DiagnosticError as error:
                problems.extend(error.diagnostics)
    if problems:
        raise DiagnosticError(problems)
    for function in functions:
        _emit_function(exe, function, [code[id(line)] for line in function.body])
    for line, stripped in locations:
        _location_line(line, stripped, exe)
    verify(exe)
    return exe


def _py_function_line(line: _Line, stripped: str, exe: Executable) -> None:
    from ..bytecode.py_functions import check_entries, parse_listing_line

    try:
        entries = exe.py_functions + (parse_listing_line(stripped),)
        check_entries(entries)
    except ValueError as error:
        raise line.error(str(error)) from None
    exe.py_functions = entries


def _location_line(line: _Line, stripped: str, exe: Executable) -> None:
    match = _LOCATION.fullmatch(stripped)
    if not match:
        raise line.error('expected \'NAME+OFFSET "location"\'')
    info = next((f for f in exe.func_table if f.name == match.group(1) and f.kind == FuncKind.VM_FUNC), None)
    offset = line.integer(match.group(2))
    if info is None or offset >= info.end_instr - info.start_instr:
        raise line.error(f"'{match.group(1)}+{match.group(2)}' is not an instruction of this listing")
    try:
        exe.source_locations[info.start_instr + offset] = json.loads(match.group(3))
    except json.JSONDecodeError:
        raise line.error("bad quoted source location") from None


def _code_line(line: _Line, stripped: str, functions: list[_Function]) -> None:
    if not line.text.startswith(" "):
        for pattern, kind in ((_PACKED, FuncKind.PACKED_FUNC), (_TIR, FuncKind.VM_TIR_FUNC),
                              (_BYTECODE, FuncKind.VM_FUNC)):
            match = pattern.fullmatch(stripped)
            if match:
                num_args = line.integer(match.group(2)) if kind == FuncKind.VM_TIR_FUNC else -1
                if any(function.name == match.group(1) for function in functions):
                    raise line.error(f"function '{match.group(1)}' is defined twice")
                functions.append(_Function(line, kind, match.group(1), num_args))
                return
        raise line.error("expected '@name:', '@name packed_func;' or '@name num_inputs=N vm_tir_func;'")
    if not functions or functions[-1].kind != FuncKind.VM_FUNC:
        raise line.error("instruction outside a bytecode function")
    functions[-1].body.append(line)


def _metadata_line(line: _Line, stripped: str, functions: list[_Function]) -> None:
    match = _METADATA.fullmatch(stripped)
    if not match:
        raise line.error("expected '@name num_inputs=N registers=R params=[...]'")
    function = next((f for f in functions if f.name == match.group(1)), None)
    if function is None or function.kind == FuncKind.PACKED_FUNC:
        raise line.error(f"'{match.group(1)}' is not a bytecode or compiled-TIR function of this listing")
    try:
        params = json.loads(match.group(4))
    except (json.JSONDecodeError, RecursionError):  # brackets nested thousands deep
        params = None
    if not isinstance(params, list) or not all(isinstance(p, str) for p in params):
        raise line.error("params must be a list of quoted names", line.text.index("params=") + 8)
    num_args = line.integer(match.group(2))
    if function.kind == FuncKind.VM_TIR_FUNC and num_args != function.num_args:
        raise line.error(f"num_inputs={num_args} disagrees with the function's line ({function.num_args})")
    function.num_args = num_args
    function.metadata = (num_args, line.integer(match.group(3)), tuple(params))


def _scope_line(line: _Line, stripped: str, exe: Executable) -> None:
    match = _SCOPE.fullmatch(stripped)
    if not match:
        raise line.error("expected 'c[INDEX] \"scope\"'")
    try:
        exe.memory_scopes[line.integer(match.group(1))] = json.loads(match.group(2))
    except json.JSONDecodeError:
        raise line.error("bad quoted memory scope") from None


def _constant_line(line: _Line, stripped: str, exe: Executable) -> None:
    match = _CONSTANT.match(stripped)
    if not match:
        raise line.error("expected 'c[INDEX] = CONSTANT'")
    if line.integer(match.group(1)) != len(exe.constants):
        raise line.error(f"expected constant c[{len(exe.constants)}] here (constants are listed in order)")
    indent = len(line.text) - len(line.text.lstrip())
    try:
        exe.constants.append(parse_constant(stripped[match.end():], indent + match.end() + 1))
    except ConstantSyntaxError as error:
        raise line.error(str(error), error.column) from None


def _emit_function(exe: Executable, function: _Function, instructions: list[Instruction]) -> None:
    if function.kind == FuncKind.PACKED_FUNC:
        exe.func_table.append(FuncInfo(FuncKind.PACKED_FUNC, function.name))
        return
    if function.metadata is None:
        raise function.line.error(f"function '{function.name}' has no line in the .functions section")
    num_args, registers, params = function.metadata
    if function.kind == FuncKind.VM_TIR_FUNC:
        exe.func_table.append(FuncInfo(FuncKind.VM_TIR_FUNC, function.name, 0, 0, num_args, registers, params))
        return
    start = len(exe.instr_offset)
    for instr in instructions:
        exe.instr_offset.append(len(exe.instr_data))
        exe.instr_data.extend(instr.words())
    exe.func_table.append(
        FuncInfo(FuncKind.VM_FUNC, function.name, start, len(exe.instr_offset), num_args, registers, params))


# ---- instruction lines -----------------------------------------------------------------------

def _layout_pattern(layout: str) -> re.Pattern:
    """A regex reading back what isa's `layout` prints: each {field} a group, the text
    between them with any run of spaces."""
    pieces = re.split(r"\{(\w+)(?::[^}]*)?\}", layout)
    pattern = ""
    for index, piece in enumerate(pieces):
        if index % 2:
            pattern += f"(?P<{piece}>.*?)"
        elif piece.strip():
            pattern += (r"\s+" if piece.startswith(" ") else r"\s*") + re.escape(piece.strip()) + r"\s*"
    return re.compile(pattern + "$")


_PATTERNS = {mnemonic: _layout_pattern(info.layout) for mnemonic, info in BY_MNEMONIC.items()}
# How a usage message names each kind of field.
_USAGE = {"func_index": "NAME", "args": "ARGS", "register": "REGISTER", "offset": "OFFSET"}


def _usage(info) -> str:
    def name(field: str) -> str:
        if field in info.register_fields:
            return _USAGE["register"]
        return _USAGE.get(field, _USAGE["offset"])

    return f"{info.mnemonic} " + re.sub(r"\{(\w+)(?::[^}]*)?\}", lambda m: name(m.group(1)), info.layout)


def _instruction(line: _Line, names: dict[str, int]) -> Instruction:
    mnemonic, _, rest = line.text.strip().partition(" ")
    info = BY_MNEMONIC.get(mnemonic)
    if info is None:
        known = list(BY_MNEMONIC)
        raise line.error(f"unknown instruction '{mnemonic}' (expected {', '.join(known[:-1])} or {known[-1]})")
    match = _PATTERNS[mnemonic].match(rest.strip())
    if match is None:
        raise line.error(f"expected '{_usage(info)}'")
    fields = tuple(_field(line, info, name, match.group(name).strip(), names) for name in info.fields)
    words = ()
    if info.variadic:
        words = tuple(_argument(line, word.strip(), names) for word in match.group("args").split(",") if word.strip())
    return Instruction(info.opcode, fields, words)


def _field(line: _Line, info, name: str, text: str, names: dict[str, int]) -> int:
    if name == "func_index":
        if text not in names:
            raise line.error(f"call to '{text}', which is not a function of this listing", line.text.index(text) + 1)
        return names[text]
    if name in info.register_fields:
        return _register(line, text, allow_void=name == "dst")  # a call may discard its result
    return _integer(line, text)


def _argument(line: _Line, text: str, names: dict[str, int]) -> int:
    column = line.text.find(text) + 1
    if text.startswith("%"):
        register = _register(line, text, allow_vm=True)
        return encode_arg(ArgKind.REGISTER, register)
    try:
        if re.fullmatch(r"i-?\d+", text):
            return encode_arg(ArgKind.IMMEDIATE, line.integer(text[1:]))
        match = re.fullmatch(r"c\[(\d+)\]", text)
        if match:
            return encode_arg(ArgKind.CONST_INDEX, line.integer(match.group(1)))
    except ValueError as error:
        raise line.error(str(error), column) from None
    match = re.fullmatch(r"f\[(.+)\]", text)
    if match:
        if match.group(1) not in names:
            raise line.error(f"f[{match.group(1)}] names no function of this listing", column)
        return encode_arg(ArgKind.FUNC_INDEX, names[match.group(1)])
    raise line.error(f"bad argument '{text}' (expected %N, %vm, iN, c[N] or f[NAME])", column)


def _register(line: _Line, text: str, allow_vm: bool = False, allow_void: bool = False) -> int:
    match = _REGISTER.fullmatch(text)
    column = line.text.find(text) + 1 if text else None
    if not match:
        raise line.error(f"expected a register, not '{text}'", column)
    if match.group(1) == "vm":
        if not allow_vm:
            raise line.error("%vm is not allowed here", column)
        return VM_REGISTER
    if match.group(1) == "void":
        if not allow_void:
            raise line.error("%void is not allowed here", column)
        return VOID_REGISTER
    register = line.integer(match.group(1))
    if register >= VOID_REGISTER:
        raise line.error(f"register %{register} is too large", column)
    return register


def _integer(line: _Line, text: str) -> int:
    if not _INT.fullmatch(text):
        raise line.error(f"expected an integer, not '{text}'", line.text.find(text) + 1 if text else None)
    return line.integer(text)
