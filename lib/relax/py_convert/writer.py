"""The statement writer of as_pyfunc: one Relax function to the text of a `@I.py_func`.

    @R.function                                   @I.py_func
    def main(x: R.Tensor(("n", 4), "float32")):   def main(self, x):
        with R.dataflow():                            import numpy as np
            y = R.nn.relu(x)                          n = x.shape[0]
            z = R.call_tir(cls.k, (y,), out_sinfo=    y = np.maximum(x, 0)
                R.Tensor((n, 4), "float32"))          z = self.call_tir(self.k, [y], out_sinfo=R.Tensor((n, 4), "float32"))
            R.output(z)                               return z
        return z

Bindings become assignments in order (dataflow blocks are plain statements: Python has
no purity to check), `R.match_cast` an assignment that reads the sizes it defines from
the value, `if` an if/else assigning the same name in both branches, tuples Python
tuples. Operators go through the backend's table (numpy_ops.py, torch_ops.py); calls of
kernels, of packed functions and of other Relax functions become the `self.` forms that
relax.BasePyModule provides. A module lowered to the VM form (after call-tir-rewrite:
explicit allocations, builtins) has no such program left and is refused.
"""

from __future__ import annotations

import keyword
import re

from ..diagnostics import UserError
from ..ir import expr as rx
from ..ir import tir_expr as tir
from ..ir.struct_info import PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo
from .table import Backend, OpCall, located
from .values import constant_text, prim_text, shape_text, sinfo_text, strip_parens

# Names the converted text uses for its own purposes: a variable of the same name is renamed.
RESERVED = {"self", "np", "nn", "torch", "F", "R", "math", "base64", "get_global_func", "tuple", "int", "float",
            "bool", "min", "max", "print", "len", "range"}

# Operators of the VM-lowered form: the module has left the level as_pyfunc converts.
LOWERED_PREFIXES = ("relax.vm.", "relax.builtin.", "relax.memory.", "relax.call_builtin_with_ctx",
                    "relax.null_value")


class Names:
    """Python names for Relax variables and size variables, unique within one function."""

    def __init__(self) -> None:
        self.of: dict[int, str] = {}
        self.taken: set[str] = set(RESERVED)
        self.sizes: dict[str, str] = {}  # TIR size variable name -> Python name

    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W", "_", hint) or "v"
        base = base if not base[0].isdigit() else "v" + base
        base = base + "_" if keyword.iskeyword(base) else base
        name, index = base, 1
        while name in self.taken:
            name, index = f"{base}_{index}", index + 1
        self.taken.add(name)
        return name

    def var(self, var: rx.Var) -> str:
        if id(var) not in self.of:
            self.of[id(var)] = self.fresh(var.name_hint)
        return self.of[id(var)]


class FunctionWriter:
    def __init__(self, mod, backend: Backend) -> None:
        self.mod = mod
        self.backend = backend
        self.names = Names()
        self.lines: list[str] = []
        self.binding_info = None  # struct info of the variable being bound: the result of its call

    # -- the function -----------------------------------------------------------------
    def write(self, name: str) -> str:
        func = self.mod[name] if name in self.mod else None
        if not isinstance(func, rx.Function):
            raise UserError(f"as_pyfunc: the module has no Relax function '{name}'")
        params = [self.names.var(param) for param in func.params]
        for param, text in zip(func.params, params):
            self.define_sizes(param.struct_info, text)
        sizes, self.lines = self.lines, []
        self.write_body(func.body, "return {}", 1)
        # a size the body never names (one only the signature mentions) is left out
        text = "\n".join(self.lines)
        body = [line for line in sizes if re.search(rf"\b{line.split()[0]}\b", text)] + self.lines
        header = [f"    {line}" for part in self.imports(body) for line in part.splitlines()]
        return "\n".join(["@I.py_func", f"def {name}(self{''.join(', ' + p for p in params)}):", *header, *body]) + "\n"

    def imports(self, body: list[str]) -> list[str]:
        """The backend's import lines and helpers that the body uses, and those that the
        helpers use in turn."""
        text = "\n".join(body)
        for _ in range(2):
            used = [line for pattern, line in self.backend.uses.items()
                    if re.search(r"(?<![\w.])" + re.escape(pattern), text)]
            text = "\n".join([*body, *used])
        return [*self.backend.imports, *used]

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def define_sizes(self, info, text: str, depth: int = 1) -> None:
        """`n = x.shape[0]` for each size variable that `info` (the struct info of the value
        named `text`) defines first."""
        if isinstance(info, TensorStructInfo) and info.shape_values is not None:
            for axis, dim in enumerate(info.shape_values):
                self.define_size(dim, f"{text}.shape[{axis}]", depth)
        elif isinstance(info, ShapeStructInfo) and info.values is not None:
            for axis, dim in enumerate(info.values):
                self.define_size(dim, f"int({text}[{axis}])", depth)
        elif isinstance(info, PrimStructInfo) and info.value is not None:
            self.define_size(info.value, f"int({text})", depth)
        elif isinstance(info, TupleStructInfo):
            for index, field in enumerate(info.fields):
                self.define_sizes(field, f"{text}[{index}]", depth)

    def define_size(self, dim, source: str, depth: int) -> None:
        if isinstance(dim, tir.Var) and dim.name not in self.names.sizes:
            self.names.sizes[dim.name] = self.names.fresh(dim.name)
            self.emit(depth, f"{self.names.sizes[dim.name]} = {source}")

    # -- statements -------------------------------------------------------------------
    def write_body(self, expr, target: str, depth: int) -> None:
        """The statements of `expr` (a SeqExpr or a leaf), its value put into `target`
        ("return {}" or "name = {}")."""
        if isinstance(expr, rx.SeqExpr):
            for block in expr.blocks:
                for binding in block.bindings:
                    self.write_binding(binding, depth)
            expr = expr.body
        if isinstance(expr, rx.If):
            self.write_if(expr, target, depth)
            return
        self.emit(depth, target.format(self.expr(expr)))

    def write_binding(self, binding, depth: int) -> None:
        value = binding.value
        if isinstance(binding, rx.MatchCast):
            name = self.names.var(binding.var)
            self.emit(depth, f"{name} = {self.expr(value)}")
            self.define_sizes(binding.struct_info, name, depth)
            return
        if isinstance(value, (rx.If, rx.SeqExpr)):
            self.write_body(value, f"{self.names.var(binding.var)} = {{}}", depth)
            return
        info = self.binding_info = binding.var.struct_info
        text = self.expr(value)
        if (self.backend.scalar_result and isinstance(value, rx.Call) and isinstance(value.op, rx.Op)
                and isinstance(info, TensorStructInfo) and info.ndim == 0):
            text = f"{self.backend.scalar_result}({text})"  # numpy reductions of 0-d results give scalars
        self.emit(depth, f"{self.names.var(binding.var)} = {text}")

    def write_if(self, expr: rx.If, target: str, depth: int) -> None:
        self.emit(depth, f"if {self.expr(expr.cond)}:")
        self.write_body(expr.true_branch, target, depth + 1)
        self.emit(depth, "else:")
        self.write_body(expr.false_branch, target, depth + 1)

    # -- expressions ------------------------------------------------------------------
    def expr(self, expr) -> str:
        if isinstance(expr, rx.Var):
            return self.names.var(expr)
        if isinstance(expr, rx.Call):
            return self.call(expr)
        if isinstance(expr, rx.Constant):
            return self.constant(expr)
        if isinstance(expr, rx.Tuple):
            items = [self.expr(field) for field in expr.fields]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if isinstance(expr, rx.TupleGetItem):
            return f"{self.expr(expr.tuple_value)}[{expr.index}]"
        if isinstance(expr, rx.ShapeExpr):
            return shape_text(expr.values, self.names.sizes)
        if isinstance(expr, rx.PrimValue):
            return strip_parens(prim_text(expr.value, self.names.sizes))
        if isinstance(expr, (rx.StringImm, rx.DataTypeImm)):
            return repr(expr.value)
        if isinstance(expr, rx.GlobalVar):
            return f"self.{expr.name_hint}"
        if isinstance(expr, rx.ExternFunc):
            return f"get_global_func({expr.global_symbol!r})"
        if isinstance(expr, rx.Function):
            raise UserError("as_pyfunc: a local function (closure) has no Python form here; run lambda-lift first")
        raise UserError(f"as_pyfunc: cannot write a {type(expr).__name__} in Python")

    def constant(self, const: rx.Constant) -> str:
        if const.data.ndim == 0 and self.backend.name == "numpy":
            return f"np.array({const.data.item()!r}, {const.data.dtype.name!r})"
        return constant_text(const.data, self.backend.tensor)

    def args(self, args) -> str:
        return ", ".join(self.expr(arg) for arg in args)

    def call(self, call: rx.Call) -> str:
        op = call.op
        if isinstance(op, rx.GlobalVar):
            if not isinstance(self.mod[op.name_hint] if op.name_hint in self.mod else None, rx.Function):
                raise located(f"as_pyfunc: '{op.name_hint}' is called directly as a kernel: the module is lowered "
                              "to the VM form already; convert it before call-tir-rewrite", call)
            return f"self.{op.name_hint}({self.args(call.args)})"
        if not isinstance(op, rx.Op):
            return f"{self.expr(op)}({self.args(call.args)})"
        special = SPECIAL.get(op.name)
        if special is not None:
            return special(self, call)
        row = self.backend.ops.get(op.name)
        if row is None:
            raise self.unmapped(op.name, call)
        infos = [getattr(arg, "struct_info", None) for arg in call.args]
        out = call.sinfo_args[0] if call.sinfo_args else self.binding_info
        return row(OpCall.of(call, [self.expr(arg) for arg in call.args], infos, out))

    def unmapped(self, op_name: str, call: rx.Call) -> Exception:
        if op_name.startswith(LOWERED_PREFIXES):
            return located(f"as_pyfunc: {op_name}: the module is lowered to the VM form already; convert it "
                           "before call-tir-rewrite (for instance after legalize-ops)", call)
        return located(f"as_pyfunc: the operator {op_name} has no {self.backend.name} mapping; run legalize-ops "
                       "first to convert it as a call_tir", call)

    # -- calls that become `self.` forms ------------------------------------------------
    def args_list(self, expr) -> str:
        fields = expr.fields if isinstance(expr, rx.Tuple) else (expr,)
        return f"[{', '.join(self.expr(field) for field in fields)}]"

    def out_sinfo(self, call: rx.Call) -> str:
        if not call.sinfo_args:
            raise UserError(f"as_pyfunc: {call.op.name} without an out_sinfo")
        return sinfo_text(call.sinfo_args[0], self.names.sizes)

    def call_tir(self, call: rx.Call) -> str:
        kernel, args = call.args[0], call.args[1]
        extra = ""
        if len(call.args) > 2:
            extra = f", tir_vars={self.expr(call.args[2])}"
        return f"self.call_tir({self.expr(kernel)}, {self.args_list(args)}, out_sinfo={self.out_sinfo(call)}{extra})"

    def call_dps_packed(self, call: rx.Call) -> str:
        func = call.args[0]
        name = repr(func.global_symbol) if isinstance(func, rx.ExternFunc) else self.expr(func)
        return f"self.call_dps_packed({name}, {self.args_list(call.args[1])}, out_sinfo={self.out_sinfo(call)})"

    def call_packed(self, call: rx.Call) -> str:
        return f"{self.expr(call.args[0])}({self.args(call.args[1:])})"

    def call_py_func(self, call: rx.Call) -> str:
        return f"self.call_py_func({self.expr(call.args[0])}, {self.args_list(call.args[1])})"

    def invoke_closure(self, call: rx.Call) -> str:
        fields = call.args[1].fields if isinstance(call.args[1], rx.Tuple) else (call.args[1],)
        return f"{self.expr(call.args[0])}({', '.join(self.expr(f) for f in fields)})"


SPECIAL = {
    "relax.call_tir": FunctionWriter.call_tir,
    "relax.call_dps_packed": FunctionWriter.call_dps_packed,
    "relax.call_pure_packed": FunctionWriter.call_packed,
    "relax.call_packed": FunctionWriter.call_packed,
    "relax.call_py_func": FunctionWriter.call_py_func,
    "relax.invoke_closure": FunctionWriter.invoke_closure,
    "relax.invoke_pure_closure": FunctionWriter.invoke_closure,
}
