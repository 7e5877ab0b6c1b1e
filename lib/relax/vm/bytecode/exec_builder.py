"""ExecBuilder: the Python API that writes bytecode, in the shape TVM's as_python prints.

    ib = ExecBuilder()
    with ib.function("main", num_inputs=2, param_names=["x", "y"]):
        ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    exe = ib.get()

`ib.r(i)`, `ib.imm(v)`, `ib.c(i)`, `ib.f(name)` and `ib.vm_state()` make argument
words; other argument values (numpy arrays, ShapeTuple or plain tuples of ints, str,
float, DataType) go to the constant pool. Functions are entered in the function
table in the order they are first named; a name first used by emit_call or f() is a
packed function until a `with ib.function(name)` gives it a body. Malformed code is
refused when emitted, when its function closes, or at the latest in get(), which
runs the same verifier as loading a file.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from ...runtime.dtype import DataType
from ...runtime.objects import ShapeTuple
from .constant_pool import canonical_constant, constant_key
from .executable import Executable, FuncInfo
from .isa import (
    VM_REGISTER, VOID_REGISTER, ArgKind, FuncKind, Instruction, Opcode, call, decode_arg, encode_arg, goto,
    if_, register_name, ret,
)
from .verifier import VerificationError, valid_function_name, verify

_FUNC_KINDS = {"packed_func": FuncKind.PACKED_FUNC, "vm_func": FuncKind.VM_FUNC, "vm_tir_func": FuncKind.VM_TIR_FUNC}


class _Function:
    """A table entry while it is being built."""

    def __init__(self, name: str, kind: FuncKind, implicit: bool):
        self.name = name
        self.kind = kind
        self.implicit = implicit   # named by a call before any declaration
        self.defined = False
        self.num_args = -1
        self.register_file_size = 0
        self.param_names: tuple[str, ...] = ()
        self.code: list[Instruction] = []
        self.locations: list[str | None] = []  # source location of each instruction


class ExecBuilder:
    def __init__(self) -> None:
        self._functions: list[_Function] = []
        self._index: dict[str, int] = {}
        self._constants: list[Any] = []
        self._constant_index: dict[tuple, int] = {}
        self._memory_scopes: dict[int, str] = {}
        self._current: _Function | None = None
        self._location: str | None = None
        self.imports: list[Any] = []

    # ---- argument words --------------------------------------------------------------

    def r(self, index) -> int:
        """A register argument; `ib.r("vm")` (or ib.r(vm) in as_python output) is the VM register."""
        if index in ("vm", VM_REGISTER):
            return encode_arg(ArgKind.REGISTER, VM_REGISTER)
        if index in ("void", VOID_REGISTER):
            return encode_arg(ArgKind.REGISTER, VOID_REGISTER)
        if not isinstance(index, int) or isinstance(index, bool) or index < 0 or index >= VOID_REGISTER:
            raise VerificationError(f"bad register number {index!r}")
        return encode_arg(ArgKind.REGISTER, index)

    def vm_state(self) -> int:
        return encode_arg(ArgKind.REGISTER, VM_REGISTER)

    def imm(self, value: int) -> int:
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise VerificationError(f"an immediate must be an int, not {type(value).__name__}")
        try:
            return encode_arg(ArgKind.IMMEDIATE, int(value))
        except ValueError as error:
            raise VerificationError(f"{error}; put it in the constant pool") from None

    def c(self, index: int) -> int:
        if not isinstance(index, int) or not 0 <= index < len(self._constants):
            raise VerificationError(f"constant c[{index}] does not exist (pool has {len(self._constants)})")
        return encode_arg(ArgKind.CONST_INDEX, index)

    def f(self, name: str) -> int:
        return encode_arg(ArgKind.FUNC_INDEX, self._lookup(name))

    # ---- constants ---------------------------------------------------------------------

    def convert_constant(self, value: Any) -> int:
        """The c[] word of `value`, adding it to the pool unless an identical one is there."""
        value = canonical_constant(value)
        key = constant_key(value)
        index = self._constant_index.get(key)
        if index is None:
            index = self._append_constant(value)
            self._constant_index[key] = index
        return encode_arg(ArgKind.CONST_INDEX, index)

    def add_constant(self, value: Any) -> int:
        """Appends `value` to the pool even if an identical one is there; returns its c[] word."""
        value = canonical_constant(value)
        index = self._append_constant(value)
        self._constant_index.setdefault(constant_key(value), index)
        return encode_arg(ArgKind.CONST_INDEX, index)

    def _append_constant(self, value: Any) -> int:
        self._constants.append(value)
        return len(self._constants) - 1

    def set_memory_scope(self, constant: int, scope: str) -> None:
        """Records the memory scope of a constant (given as its c[] word)."""
        kind, index = decode_arg(constant)
        if kind != ArgKind.CONST_INDEX or not 0 <= index < len(self._constants):
            raise VerificationError("set_memory_scope takes the c[] word of an existing constant")
        if not isinstance(scope, str) or not scope:
            raise VerificationError("a memory scope is a non-empty string")
        self._memory_scopes[index] = scope

    # ---- functions ---------------------------------------------------------------------

    def declare_function(self, name: str, kind=FuncKind.PACKED_FUNC, num_inputs: int | None = None,
                         param_names=None, register_file_size: int | None = None) -> int:
        """Enters `name` in the function table (a packed, bytecode or compiled-TIR function)."""
        if isinstance(kind, str):
            kind = _FUNC_KINDS.get(kind, kind)
        elif kind in FuncKind._value2member_map_:
            kind = FuncKind(kind)
        if not isinstance(kind, FuncKind):
            raise VerificationError(f"unknown function kind {kind!r} (expected one of: {', '.join(_FUNC_KINDS)})")
        function = self._entry(name, kind, implicit=False)
        if kind == FuncKind.VM_TIR_FUNC:
            if num_inputs is None:
                raise VerificationError(f"compiled-TIR function '{name}' needs num_inputs")
            function.num_args = num_inputs
            function.param_names = tuple(param_names or ())
            function.register_file_size = num_inputs if register_file_size is None else register_file_size
            function.defined = True
        return self._index[name]

    @contextlib.contextmanager
    def function(self, name: str, num_inputs: int = 0, param_names=None, register_file_size: int | None = None):
        """The body of bytecode function `name`: emit its instructions inside the `with`."""
        if self._current is not None:
            raise VerificationError(f"function '{name}' begun inside function '{self._current.name}'")
        function = self._entry(name, FuncKind.VM_FUNC, implicit=False)
        if function.defined:
            raise VerificationError(f"function '{name}' is defined twice")
        if not isinstance(num_inputs, int) or num_inputs < 0:
            raise VerificationError(f"function '{name}': bad num_inputs {num_inputs!r}")
        params = tuple(param_names or ())
        if params and len(params) != num_inputs:
            raise VerificationError(f"function '{name}': {len(params)} parameter names for {num_inputs} inputs")
        function.num_args = num_inputs
        function.param_names = params
        self._current = function
        self._location = None
        try:
            yield
        finally:
            self._current = None
        self._close(function, register_file_size)

    def _entry(self, name: str, kind: FuncKind, implicit: bool) -> _Function:
        if not isinstance(name, str) or not valid_function_name(name):
            raise VerificationError(f"bad function name {name!r}")
        index = self._index.get(name)
        if index is None:
            self._index[name] = len(self._functions)
            self._functions.append(_Function(name, kind, implicit))
            return self._functions[-1]
        function = self._functions[index]
        if function.kind != kind and not implicit:
            if not function.implicit:
                raise VerificationError(f"function '{name}' is already declared as {function.kind.name.lower()}")
            function.kind = kind  # a name used before its declaration takes the declared kind
        if not implicit:
            function.implicit = False
        return function

    def _lookup(self, name: str) -> int:
        if name not in self._index:
            self._entry(name, FuncKind.PACKED_FUNC, implicit=True)
        return self._index[name]

    def _close(self, function: _Function, register_file_size: int | None) -> None:
        code = function.code
        if not code:
            raise VerificationError(f"function '{function.name}' has no instructions")
        if code[-1].opcode not in (Opcode.RET, Opcode.GOTO):
            raise VerificationError(f"function '{function.name}' does not end with emit_ret or emit_goto")
        used = function.num_args
        for position, instr in enumerate(code):
            for field in instr.info.register_fields:
                register = instr.field(field)
                if register < VOID_REGISTER:
                    used = max(used, register + 1)
            for word in instr.args:
                kind, value = decode_arg(word)
                if kind == ArgKind.REGISTER and value < VOID_REGISTER:
                    used = max(used, value + 1)
            for field in instr.info.offset_fields:
                target = position + instr.field(field)
                if not 0 <= target < len(code):
                    raise VerificationError(
                        f"function '{function.name}', instruction {position}: jump to {target} "
                        f"is outside the function (0..{len(code) - 1})")
        if register_file_size is not None and register_file_size < used:
            raise VerificationError(
                f"function '{function.name}' uses {used} registers, more than register_file_size={register_file_size}")
        function.register_file_size = used if register_file_size is None else register_file_size
        function.defined = True

    # ---- instructions ------------------------------------------------------------------

    def set_source_location(self, location: str | None) -> None:
        """The instructions emitted next come from `location` ("model.relax:7:5"); None: unknown.

        Locations travel in the executable and show in VM backtraces. Each function starts unknown.
        """
        if location is not None and (not isinstance(location, str) or not location or not location.isprintable()):
            raise VerificationError(f"bad source location {location!r}")
        self._location = location

    def _emit(self, instr: Instruction) -> None:
        if self._current is None:
            raise VerificationError("instructions must be emitted inside `with ib.function(...)`")
        self._current.code.append(instr)
        self._current.locations.append(self._location)

    def emit_call(self, name: str, args=None, dst: int | None = None) -> None:
        words = [self._argument(arg) for arg in (args or [])]
        func_index = self._lookup(name)
        self._emit(call(func_index, words, VOID_REGISTER if dst is None else self._register(dst, "dst")))

    def emit_ret(self, result: int) -> None:
        self._emit(ret(self._register(result, "ret")))

    def emit_goto(self, pc_offset: int) -> None:
        self._emit(goto(self._offset(pc_offset)))

    def emit_if(self, cond: int, false_offset: int) -> None:
        self._emit(if_(self._register(cond, "If"), self._offset(false_offset)))

    def _argument(self, arg: Any) -> int:
        if isinstance(arg, bool):
            raise VerificationError("a bool is not an argument word; use ib.imm(0) or ib.imm(1)")
        if isinstance(arg, int):
            kind, _ = decode_arg(arg)
            if kind not in ArgKind._value2member_map_:
                raise VerificationError(f"argument word {arg:#x} has unknown kind {kind}")
            if kind == ArgKind.REGISTER and decode_arg(arg)[1] == VOID_REGISTER:
                raise VerificationError("%void cannot be an argument")
            return arg
        if isinstance(arg, tuple) and not isinstance(arg, ShapeTuple) and all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arg):
            arg = ShapeTuple(arg)
        if isinstance(arg, (np.ndarray, ShapeTuple, DataType, np.dtype, str, float, tuple)) or arg is None:
            return self.convert_constant(arg)
        raise VerificationError(f"cannot pass a {type(arg).__name__} as a call argument")

    @staticmethod
    def _register(word: int, what: str) -> int:
        if not isinstance(word, int) or isinstance(word, bool):
            raise VerificationError(f"{what} takes a register (ib.r(i)), not {word!r}")
        kind, value = decode_arg(word)
        if kind != ArgKind.REGISTER or value < 0:
            raise VerificationError(f"{what} takes a register (ib.r(i)), not the word {word:#x}")
        if value == VM_REGISTER or (value == VOID_REGISTER and what != "dst"):
            raise VerificationError(f"{what} cannot use the special register {register_name(value)}")
        return value

    @staticmethod
    def _offset(offset: int) -> int:
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise VerificationError(f"a jump offset is an int, not {offset!r}")
        return offset

    # ---- result ------------------------------------------------------------------------

    def get(self) -> Executable:
        """The finished Executable, verified; the bytecode is laid out in table order."""
        if self._current is not None:
            raise VerificationError(f"function '{self._current.name}' is still open")
        exe = Executable(constants=list(self._constants), memory_scopes=dict(self._memory_scopes),
                         imports=list(self.imports))
        for function in self._functions:
            if function.kind == FuncKind.PACKED_FUNC:
                exe.func_table.append(FuncInfo(FuncKind.PACKED_FUNC, function.name))
                continue
            if not function.defined:
                raise VerificationError(f"function '{function.name}' is declared but never given a body")
            start = len(exe.instr_offset)
            for instr, location in zip(function.code, function.locations):
                if location is not None:
                    exe.source_locations[len(exe.instr_offset)] = location
                exe.instr_offset.append(len(exe.instr_data))
                exe.instr_data.extend(instr.words())
            end = len(exe.instr_offset)
            if function.kind == FuncKind.VM_TIR_FUNC:
                start = end = 0
            exe.func_table.append(FuncInfo(function.kind, function.name, start, end, function.num_args,
                                           function.register_file_size, function.param_names))
        verify(exe)
        return exe
