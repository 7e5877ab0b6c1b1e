"""CodeGenVM: Relax functions in VM-ready form -> bytecode through the ExecBuilder.

The compiler side of the VM (vm/__init__ does not import it, so the runtime never
loads the IR). Input is what VMShapeLower leaves: normalized bindings whose values
are calls of packed functions, kernels, other Relax functions, closures and the
R.vm.* memory operators, plus tuples, constants and `if`.

Each variable gets its own register (parameters take 0..N-1); a binding of one
variable to another shares the register. Constants, static shapes, strings and
dtypes go to the constant pool, integers are immediates. `if` becomes
`If cond, else; <then>; goto end; else: <else>; end:` with both branches copying
their result into one register. Offsets are resolved from labels before the
instructions are handed to the builder.
"""

from __future__ import annotations

import numpy as np

from ...diagnostics import DiagnosticError, error
from ...ir import expr as rx
from ...ir import tir
from ...ir.module import IRModule
from ...ir import struct_info as si
from ...ir.struct_info import TupleStructInfo
from ...records import record
from ...runtime.dtype import DataType
from ...runtime.objects import ShapeTuple
from ..bytecode.exec_builder import ExecBuilder
from ..bytecode.executable import Executable
from ..bytecode import signature
from ..bytecode.isa import VALUE_MAX, VALUE_MIN
from .py_functions import py_function_entries

# Relax operators that survive to code generation, and the builtin each becomes.
# `True` in the second place: the builtin takes the VM as its first argument.
OPERATOR_BUILTINS = {
    "relax.vm.alloc_storage": ("vm.builtin.alloc_storage", True),
    "relax.vm.alloc_tensor": ("vm.builtin.alloc_tensor", False),
}


@record(mutable=True)
class _Label:
    name: str


class _FunctionCodegen:
    def __init__(self, builder: ExecBuilder, mod: IRModule, name: str, func: rx.Function, printed=None):
        self.builder = builder
        self.mod = mod
        self.name = name
        self.func = func
        self.printed = printed  # _AsPrinted, when the module is taken as its printed text reads back
        self.registers: dict[int, int] = {}
        self.words: dict[int, int] = {}  # variables bound to constants: their argument word
        self.next_register = 0
        self.code: list[tuple] = []  # ("call", name, args, dst) | ("ret", reg) | ("if", reg, label) | ("goto", label) | label

    # -- registers and argument words --------------------------------------------------
    def new_register(self) -> int:
        register = self.next_register
        self.next_register += 1
        return register

    def define(self, var: rx.Var) -> int:
        register = self.new_register()
        self.registers[id(var)] = register
        return register

    def word(self, expr: rx.Expr) -> int:
        """The argument word of a leaf expression; tuples are built into a register."""
        b = self.builder
        if isinstance(expr, rx.Var):
            if id(expr) in self.registers:
                return b.r(self.registers[id(expr)])
            if id(expr) in self.words:
                return self.words[id(expr)]
            raise error(f"variable '{expr.name_hint}' is used before it is defined", expr.span)
        if isinstance(expr, rx.Constant):
            return b.convert_constant(np.asarray(expr.data))  # the pool copies only what it must
        if isinstance(expr, rx.ShapeExpr):
            if not all(isinstance(v, tir.IntImm) for v in expr.values):
                raise error("a symbolic shape reached code generation (run vm-shape-lower first)", expr.span)
            return b.convert_constant(ShapeTuple(v.value for v in expr.values))
        if isinstance(expr, rx.PrimValue):
            return self.prim_word(expr)
        if isinstance(expr, rx.StringImm):
            return b.convert_constant(expr.value)
        if isinstance(expr, rx.DataTypeImm):
            return b.convert_constant(DataType.parse(expr.value))
        if isinstance(expr, (rx.GlobalVar, rx.ExternFunc)):
            name = expr.name_hint if isinstance(expr, rx.GlobalVar) else expr.global_symbol
            return b.f(name)
        if isinstance(expr, rx.Tuple):
            register = self.new_register()
            self.emit_call("vm.builtin.make_tuple", [self.word(f) for f in expr.fields], register)
            return b.r(register)
        raise error(f"cannot pass a {type(expr).__name__} as an argument here", expr.span)

    def prim_word(self, expr: rx.PrimValue) -> int:
        value = expr.value
        if isinstance(value, tir.IntImm):
            if VALUE_MIN <= value.value <= VALUE_MAX:
                return self.builder.imm(value.value)
            return self.builder.convert_constant(int(value.value))  # wider than a word: from the pool, as TVM does
        if isinstance(value, tir.FloatImm):
            return self.builder.convert_constant(float(value.value))
        raise error("a symbolic value reached code generation (run vm-shape-lower first)", expr.span)

    def emit_call(self, name: str, args: list[int], dst: int | None) -> None:
        self.code.append(("call", name, args, dst, self.location))

    # -- function ----------------------------------------------------------------------
    def generate(self) -> None:
        self.location = None
        for param in self.func.params:
            self.define(param)
        result = self.seq(self.func.body)
        self.code.append(("ret", self.in_register(result), self.location))
        self.emit_into_builder()

    def in_register(self, word_or_register) -> int:
        """A register holding the value of an argument word (copying constants in)."""
        kind, value = word_or_register
        if kind == "register":
            return value
        register = self.new_register()
        self.emit_call("vm.builtin.copy", [value], register)
        return register

    def value_of(self, expr: rx.Expr) -> tuple[str, int]:
        if isinstance(expr, rx.Var) and id(expr) in self.registers:
            return "register", self.registers[id(expr)]
        return "word", self.word(expr)

    def seq(self, seq: rx.SeqExpr) -> tuple[str, int]:
        for block in seq.blocks:
            for binding in block.bindings:
                self.binding(binding)
        return self.value_of(seq.body)

    def binding(self, binding: rx.Binding) -> None:
        if self.printed is not None:
            self.location = self.printed.locations.get(id(binding), self.location)
        elif binding.span is not None:
            self.location = str(binding.span)
        var, value = binding.var, binding.value
        if isinstance(value, rx.Var):
            if id(value) in self.registers:
                self.registers[id(var)] = self.registers[id(value)]
            else:
                self.words[id(var)] = self.word(value)
            return
        if isinstance(value, (rx.Constant, rx.ShapeExpr, rx.PrimValue, rx.StringImm, rx.DataTypeImm,
                              rx.GlobalVar, rx.ExternFunc)):
            self.words[id(var)] = self.word(value)
            return
        if isinstance(value, rx.Tuple):
            register = self.define(var)
            self.emit_call("vm.builtin.make_tuple", [self.word(f) for f in value.fields], register)
            return
        if isinstance(value, rx.TupleGetItem):
            register = self.define(var)
            self.emit_call("vm.builtin.tuple_getitem", [self.word(value.tuple_value), self.builder.imm(value.index)],
                           register)
            return
        if isinstance(value, rx.Call):
            self.call(var, value, self.printed is not None and id(binding) in self.printed.bare)
            return
        if isinstance(value, rx.If):
            self.if_(var, value)
            return
        if isinstance(value, rx.Function):
            raise error("local functions are not supported by the VM code generator yet", value.span)
        raise error(f"cannot generate code for a {type(value).__name__}", value.span)

    def call(self, var: rx.Var, call: rx.Call, bare: bool = False) -> None:
        """`bare`: the binding printed as a bare statement, which reads back bound to `_` with
        the struct info the call's own inference gives."""
        callee, args = call.op, call.args
        # A call of nothing bound to `_` has no register.
        info = _inferred(call, self.mod) if bare else var.struct_info
        void = isinstance(info, TupleStructInfo) and not info.fields and (bare or var.name_hint == "_")
        dst = None if void else self.define(var)
        if isinstance(callee, rx.ExternFunc):
            self.emit_call(callee.global_symbol, [self.word(a) for a in args], dst)
        elif isinstance(callee, rx.GlobalVar):
            target = self.mod.functions.get(callee.name_hint)
            if isinstance(target, tir.PrimFunc) and args and _is_shape(args[-1]):
                words = [self.builder.f(callee.name_hint)] + [self.word(a) for a in args]
                self.emit_call("vm.builtin.call_tir_dyn", words, dst)
            else:
                self.emit_call(callee.name_hint, [self.word(a) for a in args], dst)
        elif isinstance(callee, rx.Var):
            words = [self.builder.vm_state(), self.word(callee)] + [self.word(a) for a in args]
            self.emit_call("vm.builtin.invoke_closure", words, dst)
        elif isinstance(callee, rx.Op):
            self.operator_call(callee.name, call, dst)
        else:
            raise error(f"cannot call a {type(callee).__name__}", call.span)

    def operator_call(self, name: str, call: rx.Call, dst: int | None) -> None:
        args = call.args
        if name == "relax.call_builtin_with_ctx":
            inner = args[1].fields if isinstance(args[1], rx.Tuple) else (args[1],)
            words = [self.builder.vm_state()] + [self.word(a) for a in inner]
            self.emit_call(args[0].global_symbol, words, dst)
        elif name in OPERATOR_BUILTINS:
            builtin, with_vm = OPERATOR_BUILTINS[name]
            words = ([self.builder.vm_state()] if with_vm else []) + [self.word(a) for a in args]
            self.emit_call(builtin, words, dst)
        elif name == "relax.vm.kill_object":
            target = args[0]
            if isinstance(target, rx.Var) and id(target) in self.registers:
                self.emit_call("vm.builtin.null_value", [], self.registers[id(target)])
        elif name == "relax.vm.call_tir_dyn":
            inner = args[1].fields if isinstance(args[1], rx.Tuple) else (args[1],)
            self.emit_call("vm.builtin.call_tir_dyn", [self.word(args[0])] + [self.word(a) for a in inner], dst)
        else:
            short = "R." + name.removeprefix("relax.")
            raise error(f"operator {short} reached code generation: it has no lowering to the VM "
                        f"(is it legalized?)", call.span)

    def if_(self, var: rx.Var, branch: rx.If) -> None:
        result = self.define(var)
        condition = self.new_register()
        self.emit_call("vm.builtin.read_if_cond", [self.word(branch.cond)], condition)
        else_label, end_label = _Label("else"), _Label("end")
        self.code.append(("if", condition, else_label, self.location))
        then_value = self.seq(branch.true_branch)
        self.emit_call("vm.builtin.copy", [self._as_word(then_value)], result)
        self.code.append(("goto", end_label, self.location))
        self.code.append(else_label)
        else_value = self.seq(branch.false_branch)
        self.emit_call("vm.builtin.copy", [self._as_word(else_value)], result)
        self.code.append(end_label)

    def _as_word(self, value: tuple[str, int]) -> int:
        kind, payload = value
        return self.builder.r(payload) if kind == "register" else payload

    # -- assembly ------------------------------------------------------------------------
    def emit_into_builder(self) -> None:
        positions: dict[int, int] = {}
        index = 0
        for item in self.code:
            if isinstance(item, _Label):
                positions[id(item)] = index
            else:
                index += 1
        b = self.builder
        param_names = [_name_of(p, p.name_hint, self.printed) for p in self.func.params]
        with b.function(self.name, num_inputs=len(self.func.params), param_names=param_names,
                        register_file_size=max(self.next_register, 1)):
            index = 0
            for item in self.code:
                if isinstance(item, _Label):
                    continue
                kind, location = item[0], item[-1]
                b.set_source_location(location)
                if kind == "call":
                    _, name, args, dst, _ = item
                    b.emit_call(name, args, None if dst is None else b.r(dst))
                elif kind == "ret":
                    b.emit_ret(b.r(item[1]))
                elif kind == "if":
                    b.emit_if(b.r(item[1]), positions[id(item[2])] - index)
                elif kind == "goto":
                    b.emit_goto(positions[id(item[1])] - index)
                index += 1


def _inferred(call: rx.Call, mod: IRModule):
    """The struct info normalization gives `call` bound to a variable without one."""
    from ...op.infer import struct_info_of

    try:
        return struct_info_of(call, mod)
    except DiagnosticError:
        return None


def _is_shape(expr: rx.Expr) -> bool:
    if isinstance(expr, rx.ShapeExpr):
        return True
    from ...ir.struct_info import ShapeStructInfo

    return isinstance(expr, rx.Var) and isinstance(expr.struct_info, ShapeStructInfo)


@record
class _AsPrinted:
    """What the code generator takes from a module's printed text (script.printed_bindings)."""

    locations: dict  # id of a binding -> its source location in the text, "model.vms:12:9"
    bare: frozenset  # ids of the bindings printed as bare statements
    names: dict  # id of a variable printed under another name -> that name


def _name_of(node, name: str, printed: _AsPrinted | None) -> str:
    return name if printed is None else printed.names.get(id(node), name)


def generate(mod: IRModule, builder: ExecBuilder | None = None, printed=None, source: str | None = None) -> Executable:
    """Bytecode for every Relax function of a VM-ready module (kernels are resolved later).

    With `printed` (a script.printed_bindings.PrintedBindings of the module) and `source`
    (the name of its text), the bytecode of the module as that text reads back: its source
    locations, its functions' order and the names printing gave."""
    builder = builder or ExecBuilder()
    as_printed, functions = None, list(mod.functions.items())
    if printed is not None:
        as_printed = _AsPrinted({key: f"{source}:{line}:{column}" for key, (line, column) in printed.positions.items()},
                                frozenset(printed.bare), printed.names)
        functions = [(name, mod.functions[name]) for name in printed.order]
    problems = []
    for name, func in functions:
        if isinstance(func, rx.Function):
            try:
                _FunctionCodegen(builder, mod, name, func, as_printed).generate()
            except DiagnosticError as exc:
                problems.extend(exc.diagnostics)
    if problems:
        raise DiagnosticError(problems)
    # After every function, so that the constants the code uses keep their indices.
    for name, func in functions:
        if isinstance(func, rx.Function):
            builder.convert_constant(signature_record(name, func, as_printed))
    exe = builder.get()
    exe.py_functions = py_function_entries(mod)  # R.call_py_func targets and embedded sources
    return exe


# ---- signature records (vm/bytecode/signature.py) ---------------------------------------------------

_DIM_OPERATORS = {tir.Add: "add", tir.Sub: "sub", tir.Mul: "mul", tir.FloorDiv: "floordiv",
                  tir.FloorMod: "floormod", tir.Min: "min", tir.Max: "max"}


def _dim_record(expr, printed=None):
    if isinstance(expr, tir.IntImm):
        return int(expr.value)
    if isinstance(expr, tir.Var):
        return _name_of(expr, expr.name, printed)
    operator = _DIM_OPERATORS.get(type(expr))
    if operator is not None:
        a, b = _dim_record(expr.a, printed), _dim_record(expr.b, printed)
        return None if a is None or b is None else [operator, a, b]
    return None


def _struct_info_record(info, printed=None) -> dict:
    if isinstance(info, si.TensorStructInfo):
        values = info.shape_values
        record = {"kind": "tensor", "dtype": info.dtype}
        if values is not None:
            record["shape"] = [_dim_record(v, printed) for v in values]
        else:
            record["shape"], record["ndim"] = None, info.ndim
        return record
    if isinstance(info, si.ShapeStructInfo):
        if info.values is not None:
            return {"kind": "shape", "values": [_dim_record(v, printed) for v in info.values]}
        return {"kind": "shape", "values": None, "ndim": info.ndim}
    if isinstance(info, si.PrimStructInfo):
        record = {"kind": "prim", "dtype": info.dtype}
        value = _dim_record(info.value, printed) if info.value is not None else None
        if value is not None:
            record["value"] = value
        return record
    if isinstance(info, si.TupleStructInfo):
        return {"kind": "tuple", "fields": [_struct_info_record(f, printed) for f in info.fields]}
    if isinstance(info, si.FuncStructInfo):
        return {"kind": "func"}
    return {"kind": "object"}


def signature_record(name: str, func: rx.Function, printed: _AsPrinted | None = None) -> str:
    """The signature constant of a Relax function: parameter and result struct info (with
    `printed`, under the names its text gives them)."""
    params = [(_name_of(p, p.name_hint, printed), _struct_info_record(p.struct_info, printed)) for p in func.params]
    ret = func.ret_struct_info if func.ret_struct_info is not None else getattr(func.body, "struct_info", None)
    return signature.encode(name, params, _struct_info_record(ret, printed))
