"""Printing Relax: functions, binding blocks, bindings and expressions.

Follows TVM 0.27's choices: annotations on every binding except a call_tir or
call_dps_packed whose output struct info already says it; `cls = Module` and
`n = T.int64()` declared at the top of a function when first used in its body;
dataflow blocks closed by `R.output(...)` of their non-dataflow variables.

Constants: scalars print as `R.const(value, "dtype")` (non-finite floats as the
strings "inf", "-inf", "nan", as TVM does). Tensors, which TVM would move to a
metadata section, print inline as nested lists, `R.const([[1, 2], [3, 4]], "int32")`,
so that the text stays self-contained; this is deterministic and reads back exactly
(printer_arrays.py).
"""

from __future__ import annotations

from .. import ir
from ..ir import struct_info as si
from . import array_literals
from . import printer_doc as doc
from .printer_arrays import array_text
from .printer_prim_expr import PrimExprPrinter
from .relax_dtensor import print_device_mesh
from .printer_struct_info import StructInfoPrinter, same_struct_info
from .printer_values import attr_value, indent

EMPTY_COMMENT = "\x00"  # a `#`-less empty comment line: indentation only, as TVM prints it

_DPS_CALLS = {"relax.call_tir", "relax.call_tir_with_grad", "relax.call_dps_packed", "relax.call_tir_inplace"}
_PACKED_CALLEE_OPS = {"relax.call_pure_packed", "relax.call_builtin_with_ctx", "relax.call_inplace_packed"}  # callee prints as a string
_STRING_TAIL_OPS = {"relax.hint_on_device"}
_HIDES_ANNOTATION = {"relax.call_tir", "relax.call_dps_packed"}


class RelaxPrinter:
    def __init__(self, ctx):
        self.ctx = ctx
        self.body_exprs = PrimExprPrinter(ctx, "int64", on_free_var=self._body_var)
        self.sig_exprs = PrimExprPrinter(ctx, "int64", on_free_var=self._signature_var)
        self.body_info = StructInfoPrinter(ctx, self.body_exprs, False, self.expr)
        self.sig_info = StructInfoPrinter(ctx, self.sig_exprs, True, self.expr)
        self.depth = 0  # nesting of Relax functions; 1 is a module's function
        self.top_function = None
        self._var_counts: dict[int, int] | None = None  # occurrences of each Var in top_function

    # -- symbolic variables --------------------------------------------------------
    def _signature_var(self, var) -> str:
        # A module-level TypeVar parses back as int64: other dtypes are declared in the body.
        if self.depth > 1 or var.dtype != "int64":
            return self._body_var(var)
        return self.ctx.add_type_var(var, var.name)

    def _body_var(self, var) -> str:
        ctx = self.ctx
        name = ctx.define(var, var.name)
        creation = ctx.tir(var.dtype) + ("(is_size_var=True)" if isinstance(var, ir.tir.SizeVar) else "()")
        if ctx.function_header is not None:
            ctx.function_header.append(f"{name} = {creation}")
        return name

    def _module_alias(self) -> str:
        ctx = self.ctx
        if not ctx.module_alias_printed and ctx.function_header is not None:
            ctx.function_header.append(f"cls = {ctx.module_name}")
            ctx.module_alias_printed = True
        return "cls"

    # -- functions -----------------------------------------------------------------
    def function(self, func: ir.Function, name: str, top_level: bool) -> list[str]:
        ctx = self.ctx
        saved = (ctx.function_header, ctx.module_alias_printed)
        header: list[str] = []
        ctx.function_header, ctx.module_alias_printed = header, False
        reserved: set[str] = set()
        if self.depth == 0:
            self.top_function, self._var_counts = func, None
            renamed_before = len(ctx.renamed)
            # Its int64 signature sizes print as module-level TypeVars, by their plain names: a
            # parameter or binding of the same name would hide one in the text read back.
            reserved = {var.name for var in _signature_sizes(func) if var.dtype == "int64"} - ctx.taken
            ctx.taken |= reserved
        self.depth += 1
        try:
            with ctx.signature_vars(), ctx.scope():
                ret = ""
                if func.ret_struct_info is not None:
                    ret = f" -> {self.sig_info.print(func.ret_struct_info)}"
                params = []
                for param in func.params:
                    annotation = self.sig_info.print(param.struct_info) if param.struct_info is not None else None
                    pname = ctx.define(param, param.name_hint)
                    params.append(f"{pname}: {annotation}" if annotation else pname)
                attrs = dict(func.attrs)
                if top_level and attrs.get("global_symbol") == name:
                    del attrs["global_symbol"]
                if attrs:
                    header.append(f"{ctx.relax('func_attr')}({attr_value(ctx, self.body_exprs, attrs)})")
                options = []
                if not func.is_pure:
                    options.append("pure=False")
                if top_level and "global_symbol" not in func.attrs:
                    options.append("private=True")
                decorator = "@" + ctx.relax("function") + (f"({', '.join(options)})" if options else "")
                body = self.seq_expr(func.body, use_return=True)
                lines = [decorator, f"def {name}({', '.join(params)}){ret}:"] + indent(header + body)
        finally:
            self.depth -= 1
            ctx.function_header, ctx.module_alias_printed = saved
            ctx.taken -= reserved
        if self.depth == 0 and ctx.printed_bindings is not None:
            ctx.printed_bindings.names.update((id(node), name) for node, name in ctx.renamed[renamed_before:])
        return lines

    # -- sequences and blocks ------------------------------------------------------
    def seq_expr(self, node, use_return: bool) -> list[str]:
        if not isinstance(node, ir.SeqExpr):
            value = self.expr(node)
            return [f"return {value}" if use_return else value]
        lines: list[str] = []
        for block in node.blocks:
            lines.extend(self.block(block))
        result = self.expr(node.body)
        lines.append(f"return {result}" if use_return else result)
        return lines

    def block(self, block) -> list[str]:
        lines: list[str] = []
        for binding in block.bindings:
            lines.extend(self.binding(binding))
        if isinstance(block, ir.DataflowBlock):
            outputs = [self.ctx.name_of(b.var) for b in block.bindings if not isinstance(b.var, ir.DataflowVar)]
            lines.append(doc.call(self.ctx.relax("output"), [o for o in outputs if o is not None]))
            return [f"with {self.ctx.relax('dataflow')}():"] + indent(lines)
        return lines

    def binding(self, binding) -> list[str]:
        marks = self.ctx.printed_bindings
        if marks is None:
            return self._binding_lines(binding)
        number = marks.number(binding)  # before the bindings an `if` holds
        return marks.mark(number, self._binding_lines(binding))

    def _binding_lines(self, binding) -> list[str]:
        var, value = binding.var, binding.value
        if isinstance(binding, ir.MatchCast):
            annotation = self._annotation(var, value)
            rhs = doc.call(self.ctx.relax("match_cast"), [self.expr(value), self.body_info.print(binding.struct_info)])
            return [self._assign(self.ctx.define(var, var.name_hint), annotation, rhs)]
        if isinstance(value, ir.If):
            annotation = self._annotation(var, value)
            name = self.ctx.define(var, var.name_hint)
            return self.if_lines(value, f"{name}: {annotation}" if annotation else name)
        if isinstance(value, ir.Function):
            return self._local_function(var, value)
        if _is_void_binding(var, value) and not self._is_used(var):
            # TVM prints a binding of nothing as a bare statement; its variable gets a
            # name only if something refers to it later.
            if self.ctx.printed_bindings is not None:
                self.ctx.printed_bindings.bare.add(id(binding))
            return [self.expr(value)]
        rhs = self.expr(value, top_level_tuple=True)
        annotation = self._annotation(var, value)
        return [self._assign(self.ctx.define(var, var.name_hint), annotation, rhs)]

    def _is_used(self, var) -> bool:
        """Whether `var` occurs anywhere but where it is bound (counted once per
        function, and only when a binding of nothing asks)."""
        if self.top_function is None:
            return True  # an expression printed on its own: keep every name
        if self._var_counts is None:
            from ..ir.visitor import pre_order

            self._var_counts = {}
            for node in pre_order(self.top_function):
                if isinstance(node, ir.Var):
                    self._var_counts[id(node)] = self._var_counts.get(id(node), 0) + 1
        return self._var_counts.get(id(var), 0) > 1

    @staticmethod
    def _assign(name: str, annotation: str | None, rhs: str) -> str:
        return f"{name}: {annotation} = {rhs}" if annotation else f"{name} = {rhs}"

    def _annotation(self, var, value) -> str | None:
        info = var.struct_info
        if info is None:
            return None
        if isinstance(value, ir.Call) and isinstance(value.op, ir.Op) and value.op.name in _HIDES_ANNOTATION:
            if len(value.sinfo_args) == 1 and same_struct_info(value.sinfo_args[0], info):
                return None
        return self.body_info.print(info)

    def if_lines(self, node: ir.If, target: str | None) -> list[str]:
        cond = self.expr(node.cond)
        branches = []
        for branch in (node.true_branch, node.false_branch):
            with self.ctx.scope():
                lines = self.seq_expr(branch, use_return=False)
            if target is not None:
                lines[-1] = f"{target} = {lines[-1]}"
            branches.append(lines)
        return [f"if {cond}:"] + indent(branches[0]) + ["else:"] + indent(branches[1])

    def _local_function(self, var, func: ir.Function) -> list[str]:
        name = self.ctx.define(var, var.name_hint)
        lines = self.function(func, name, top_level=False)
        header = self.ctx.header_lines(include_ir=False)
        return header + [EMPTY_COMMENT] + lines + [""]

    # -- expressions ---------------------------------------------------------------
    def expr(self, node, top_level_tuple: bool = False) -> str:
        """`node` as Relax script text; a tuple of several fields on the right of a
        binding (`top_level_tuple`) prints without its parentheses."""
        if isinstance(node, ir.Tuple):
            return self._tuple(node, top_level_tuple)
        for node_type, print_node in _EXPR_PRINTERS:
            if isinstance(node, node_type):
                return print_node(self, node)
        raise TypeError(f"cannot print {type(node).__name__} as a Relax expression")

    def _var(self, node: ir.Var) -> str:
        name = self.ctx.name_of(node)
        return name if name is not None else self.ctx.define(node, node.name_hint)

    def _global_var(self, node: ir.GlobalVar) -> str:
        if self.ctx.in_module:
            return f"{self._module_alias()}.{node.name_hint}"
        return f'{self.ctx.ir("GlobalVar")}({doc.string_text(node.name_hint)})'

    def _tuple(self, node: ir.Tuple, top_level_tuple: bool) -> str:
        if not node.fields:
            return f"{self.ctx.relax('tuple')}()"
        fields = [self.expr(f) for f in node.fields]
        if top_level_tuple and len(fields) > 1:
            return ", ".join(fields)
        return doc.tuple_text(fields)

    def _tuple_get_item(self, node: ir.TupleGetItem) -> str:
        return f"{self.expr(node.tuple_value)}[{node.index}]"

    def _shape_expr(self, node: ir.ShapeExpr) -> str:
        return f"{self.ctx.relax('shape')}({doc.list_text([self.body_exprs.expr(v) for v in node.values])})"

    def _prim_value(self, node: ir.PrimValue) -> str:
        return self.body_exprs.expr(node.value)

    def _string_imm(self, node: ir.StringImm) -> str:
        return f"{self.ctx.relax('str')}({doc.string_text(node.value)})"

    def _data_type_imm(self, node: ir.DataTypeImm) -> str:
        return f"{self.ctx.relax('dtype')}({doc.string_text(node.value)})"

    def _extern_func(self, node: ir.ExternFunc) -> str:
        return f"{self.ctx.relax('ExternFunc')}({doc.string_text(node.global_symbol)})"

    def _op(self, node: ir.Op) -> str:
        return f'{self.ctx.ir("Op")}({doc.string_text(node.name)})'

    def constant(self, node: ir.Constant) -> str:
        data = node.data
        dtype = str(data.dtype)
        text = array_literals.defer(data) or array_text(data)  # a placeholder within relaxc's one-shot
        return f"{self.ctx.relax('const')}({text}, {doc.string_text(dtype)})"

    def _callee(self, node) -> str:
        if isinstance(node, ir.ExternFunc):
            return doc.string_text(node.global_symbol)
        return self.expr(node)

    def _sinfo_list(self, infos) -> str:
        if len(infos) == 1 and isinstance(infos[0], si.TupleStructInfo) and infos[0].fields:
            return doc.list_text([self.body_info.print(f) for f in infos[0].fields])
        if len(infos) == 1:
            return self.body_info.print(infos[0])
        return doc.list_text([self.body_info.print(f) for f in infos])

    def call(self, node: ir.Call) -> str:
        ctx = self.ctx
        op = node.op
        ty_args = [("ty_args", doc.tuple_text([self.body_info.print(i) for i in node.sinfo_args]))] if node.sinfo_args else []
        if isinstance(op, ir.ExternFunc):
            args = [doc.string_text(op.global_symbol)] + [self.expr(a) for a in node.args]
            return doc.call(ctx.relax("call_packed"), args, self._attrs(node) + ty_args)
        if isinstance(op, ir.Op) and op.name in _DPS_CALLS:
            return self._dps_call(node)
        if isinstance(op, ir.Op) and op.name == "relax.print" and node.args:
            args = [self.expr(a) for a in node.args[1:]]
            return doc.call(ctx.relax("print"), args, [("format", self.expr(node.args[0]))])
        if isinstance(op, ir.Op) and op.name == "relax.assert_op" and len(node.args) >= 2:
            args = [self.expr(node.args[0])] + [self.expr(a) for a in node.args[2:]]
            return doc.call(ctx.relax("assert_op"), args, [("format", self.expr(node.args[1]))])
        if isinstance(op, ir.Op) and op.name in _PACKED_CALLEE_OPS and node.args:
            args = [self._callee(node.args[0])] + [self.expr(a) for a in node.args[1:]]
            return doc.call(ctx.relax(op.name[len("relax."):]), args, self._attrs(node) + ty_args)
        args = [self.expr(a) for a in node.args]
        if isinstance(op, ir.Op) and op.name in _STRING_TAIL_OPS and node.args and isinstance(node.args[-1], ir.StringImm):
            args[-1] = doc.string_text(node.args[-1].value)  # an attribute TVM prints as a plain string
        if isinstance(op, ir.Op):
            name = op.name[len("relax."):] if op.name.startswith("relax.") else op.name
            return doc.call(ctx.relax(name), args, self._attrs(node) + ty_args)
        return doc.call(self.expr(op), args, self._attrs(node) + ty_args)

    def _dps_call(self, node: ir.Call) -> str:
        name = node.op.name[len("relax."):]
        callee = self._callee(node.args[0])
        inputs = node.args[1] if len(node.args) > 1 else ir.Tuple(())
        inputs_text = doc.tuple_text([self.expr(f) for f in inputs.fields]) if isinstance(inputs, ir.Tuple) else self.expr(inputs)
        kwargs = [("out_ty", self._sinfo_list(node.sinfo_args))] if node.sinfo_args else []
        if len(node.args) > 2:
            kwargs.append(("tir_vars", self.expr(node.args[2])))
        kwargs += self._attrs(node)
        return doc.call(self.ctx.relax(name), [callee, inputs_text], kwargs)

    def _attrs(self, node: ir.Call) -> list[tuple[str, str]]:
        return [(key, self.attr(value)) for key, value in node.attrs.items()]

    def attr(self, value) -> str:
        if isinstance(value, ir.Expr):
            return self.expr(value)
        if isinstance(value, ir.FrozenDict) and set(value) == {"initial_indices", "final_indices"}:
            return self._index_map(value)
        if isinstance(value, ir.FrozenDict) and value.get("kind") == "device_mesh":
            return print_device_mesh(self, value)
        if isinstance(value, ir.FrozenDict) and value.get("kind") == "vdevice":
            args = [self.attr(value.get("target")), self.attr(value.get("vdevice_id", 0)),
                    self.attr(value.get("memory_scope", "global"))]
            return doc.call(self.ctx.ir("vdevice"), args)
        if isinstance(value, ir.FrozenDict):
            items = sorted(value.items(), key=lambda kv: str(kv[0]))
            return "{" + ", ".join(f"{self.attr(k)}: {self.attr(v)}" for k, v in items) + "}"
        if isinstance(value, (tuple, list)):
            return doc.list_text([self.attr(v) for v in value])
        return attr_value(self.ctx, self.body_exprs, value)

    def _index_map(self, value) -> str:
        """`T.index_map(lambda i, j: (j, i))`: the lambda's parameters are its own names."""
        with self.ctx.scope():
            params = [self.ctx.define(v, v.name) for v in value["initial_indices"]]
            results = [self.body_exprs.expr(e) for e in value["final_indices"]]
        return f"{self.ctx.tir('index_map')}(lambda {', '.join(params)}: {doc.tuple_text(results)})"


# How RelaxPrinter.expr prints each kind of expression other than a tuple: the first row
# whose type the node is an instance of.
_EXPR_PRINTERS = (
    (ir.Var, RelaxPrinter._var),
    (ir.GlobalVar, RelaxPrinter._global_var),
    (ir.Call, RelaxPrinter.call),
    (ir.Constant, RelaxPrinter.constant),
    (ir.TupleGetItem, RelaxPrinter._tuple_get_item),
    (ir.ShapeExpr, RelaxPrinter._shape_expr),
    (ir.PrimValue, RelaxPrinter._prim_value),
    (ir.StringImm, RelaxPrinter._string_imm),
    (ir.DataTypeImm, RelaxPrinter._data_type_imm),
    (ir.ExternFunc, RelaxPrinter._extern_func),
    (ir.Op, RelaxPrinter._op),
)


def _signature_sizes(func: ir.Function) -> list:
    """The TIR variables in the struct info of `func`'s parameters and result."""
    from ..ir.analysis import collect

    infos = [param.struct_info for param in func.params] + [func.ret_struct_info]
    return [var for info in infos if info is not None for var in collect(info, lambda node: isinstance(node, ir.tir.Var))]


def _is_void(info) -> bool:
    return isinstance(info, si.TupleStructInfo) and not info.fields


_VOID_OPS = {"relax.print", "relax.assert_op"}


def _is_void_binding(var, value) -> bool:
    if isinstance(value, ir.Call) and isinstance(value.op, ir.Op) and value.op.name in _VOID_OPS:
        return var.struct_info is None or _is_void(var.struct_info)
    if isinstance(value, ir.Tuple) and not value.fields:
        return var.struct_info is None or _is_void(var.struct_info)
    if not isinstance(value, ir.Call):
        return False
    if var.struct_info is None:
        # The parser binds an expression statement to a variable `_` of unknown struct info.
        return var.name_hint == "_" or (len(value.sinfo_args) == 1 and _is_void(value.sinfo_args[0]))
    return _is_void(var.struct_info)
