"""The `R.<name>(...)` forms that are not a plain operator call, as TVM represents them.

    R.call_tir(cls.k, (a, b), out_sinfo=S, tir_vars=R.shape([n]))
        -> Call(Op("relax.call_tir"), (GlobalVar k, Tuple(a, b)[, ShapeExpr]), sinfo_args=(S,))
    R.call_tir_inplace(cls.k, (a,), inplace_indices=[0], out_sinfo=S)   (attrs inplace_indices)
    R.call_dps_packed("f", (a,), out_sinfo=S)   (the callee is an ExternFunc)
    R.call_packed("f", a, sinfo_args=S)         -> Call(ExternFunc f, (a,), sinfo_args=(S,))
    R.call_pure_packed("f", a, sinfo_args=S)    -> Call(Op(...), (ExternFunc f, a), ...)
    R.const(1.5, "float32")  R.shape([n, 4])  R.prim_value(n)  R.str("s")  R.dtype("f32")
    R.tuple(a, b)  R.ExternFunc("f")  R.print(a, format="")  R.assert_op(c, a, format="")
    R.ShapeExpr((m, n))  R.TupleGetItem(t, 0)   (the node constructors' spellings)

The output struct info may come by position or as `out_sinfo=` (TVM 0.27 prints
`out_ty=`); a list of them is the fields of one TupleStructInfo. `sinfo_args=` is
also spelled `ty_args=`. Each handler checks its arguments and reports a wrong
arity or a missing argument at the call.
"""

from __future__ import annotations

import ast

import numpy as np

from .. import ir
from .literal_limits import LiteralError, check_constant, check_literal
from .relax_literals import NotALiteral, number_or_list
from .relax_py_call import call_py_func


def bind_arguments(parser, node: ast.Call, name: str, positional: tuple[str, ...],
                   required: tuple[str, ...] = (), keywords: tuple[str, ...] = ()) -> dict[str, ast.expr]:
    """Matches a call's arguments to parameter names, as Python would, with errors
    that name the TVMScript function."""
    ctx = parser.ctx
    parser.positional(node)
    if len(node.args) > len(positional):
        raise ctx.fail(
            f"R.{name} takes {_count(len(positional), 'positional argument')}, got {len(node.args)}",
            node.args[len(positional)],
        )
    bound = dict(zip(positional, node.args))
    for keyword in node.keywords:
        if keyword.arg is None:
            raise ctx.fail("'**' arguments are not supported", keyword)
        if keyword.arg not in positional and keyword.arg not in keywords:
            raise ctx.fail(f"R.{name} has no argument '{keyword.arg}'", keyword)
        if keyword.arg in bound:
            raise ctx.fail(f"R.{name} got argument '{keyword.arg}' twice", keyword)
        bound[keyword.arg] = keyword.value
    missing = [key for key in required if key not in bound]
    if missing:
        raise ctx.fail(f"R.{name} needs the argument '{missing[0]}'", node)
    return bound


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _callee(parser, node: ast.expr, packed: bool) -> ir.Expr:
    """The function of a call_tir (a GlobalVar) or of a packed call (a name, or an ExternFunc)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return ir.ExternFunc(node.value, span=parser.ctx.span(node))
    callee = parser.global_var(node)
    if callee is None:
        callee = parser.expr(node)
    if not packed and not isinstance(callee, (ir.GlobalVar, ir.ExternFunc, ir.Var)):
        raise parser.ctx.fail("the callee must be a function of the module, such as cls.kernel", node)
    return callee


def _argument_tuple(parser, node: ast.expr) -> ir.Expr:
    """The arguments of a DPS call: a tuple, or one value that stands for a 1-tuple."""
    value = parser.expr(node)
    if isinstance(value, ir.Tuple):
        return value
    if isinstance(getattr(value, "struct_info", None), ir.TupleStructInfo):
        return value
    return ir.Tuple((value,), span=parser.ctx.span(node))


def _index_list(parser, node: ast.expr, name: str) -> tuple[int, ...]:
    elements = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    indices = []
    for element in elements:
        value = element
        sign = 1
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
            sign, value = -1, value.operand
        if not (isinstance(value, ast.Constant) and type(value.value) is int):
            raise parser.ctx.fail(f"{name} must be a list of integers", element)
        indices.append(sign * value.value)
    return tuple(indices)


# The parameters of the DPS call forms, in positional order, as TVM's Python API
# declares them; `out_ty` is TVM 0.27's name for `out_sinfo`.
_DPS_PARAMETERS = {
    "call_tir": ("callee", "args", "out_sinfo", "tir_vars"),
    "call_tir_inplace": ("callee", "args", "inplace_indices", "out_sinfo", "tir_vars"),
    "call_tir_with_grad": ("callee", "args", "out_sinfo", "te_grad_name", "te_grad_kwargs", "tir_vars"),
    "call_dps_packed": ("callee", "args", "out_sinfo"),
}


def _dps_arguments(parser, node: ast.Call, name: str) -> dict[str, ast.expr]:
    positional = _DPS_PARAMETERS[name]
    bound = bind_arguments(parser, node, name, positional, ("callee", "args"), ("out_ty",))
    if "out_ty" in bound:
        if "out_sinfo" in bound:
            raise parser.ctx.fail(f"R.{name} takes out_sinfo or out_ty, not both", bound["out_ty"])
        bound["out_sinfo"] = bound.pop("out_ty")
    for required in ("inplace_indices", "out_sinfo", "te_grad_name"):
        if required in positional and required not in bound:
            raise parser.ctx.fail(f"R.{name} needs the argument '{required}'", node)
    return bound


def call_tir(parser, node: ast.Call, name: str = "call_tir") -> ir.Call:
    bound = _dps_arguments(parser, node, name)
    callee = _callee(parser, bound["callee"], packed=False)
    args = [callee, _argument_tuple(parser, bound["args"])]
    tir_vars = bound.get("tir_vars")
    if tir_vars is not None and not (isinstance(tir_vars, ast.Constant) and tir_vars.value is None):
        value = parser.expr(tir_vars)
        if isinstance(value, ir.Tuple):  # a plain list of dimensions means a shape
            value = ir.ShapeExpr(tuple(parser.shape_dim(d) for d in tir_vars.elts), span=value.span)
        args.append(value)
    attrs = {}
    if "inplace_indices" in bound:
        attrs["inplace_indices"] = _index_list(parser, bound["inplace_indices"], "inplace_indices")
    for key in ("te_grad_name", "te_grad_kwargs"):
        if key in bound:
            attrs[key] = parser.attr_value(bound[key])
    span = parser.ctx.span(node)
    return ir.Call(ir.Op("relax." + name, span=span), tuple(args), ir.FrozenDict(attrs) if attrs else ir.EMPTY,
                   (parser.struct_info_list(bound["out_sinfo"]),), span=span)


def call_tir_inplace(parser, node: ast.Call) -> ir.Call:
    return call_tir(parser, node, "call_tir_inplace")


def call_tir_with_grad(parser, node: ast.Call) -> ir.Call:
    return call_tir(parser, node, "call_tir_with_grad")


def call_dps_packed(parser, node: ast.Call) -> ir.Call:
    bound = _dps_arguments(parser, node, "call_dps_packed")
    args = (_callee(parser, bound["callee"], packed=True), _argument_tuple(parser, bound["args"]))
    span = parser.ctx.span(node)
    return ir.Call(ir.Op("relax.call_dps_packed", span=span), args, ir.EMPTY,
                   (parser.struct_info_list(bound["out_sinfo"]),), span=span)


def call_packed(parser, node: ast.Call) -> ir.Call:
    if not node.args:
        raise parser.ctx.fail("R.call_packed needs the name of the packed function", node)
    callee = _callee(parser, node.args[0], packed=True)
    args = parser.exprs(parser.positional(node)[1:])
    attrs, sinfo_args = parser.keyword_attrs(node, skip=("attrs_type_key",))
    return ir.Call(callee, args, attrs, sinfo_args, span=parser.ctx.span(node))


def _packed_operator(op_name: str):
    def read(parser, node: ast.Call) -> ir.Call:
        if not node.args:
            raise parser.ctx.fail(f"R.{op_name} needs the name of the packed function", node)
        return parser.operator_call(node, "relax." + op_name, first_extern=True)

    return read


def const(parser, node: ast.Call) -> ir.Constant:
    bound = bind_arguments(parser, node, "const", ("value", "dtype"), ("value",))
    value_node = bound["value"]
    dtype = None
    if "dtype" in bound:
        dtype = parser.dtype_string(bound["dtype"], allow_none=True)
        dtype = None if dtype == "void" else dtype
    try:
        if isinstance(value_node, ast.Name) and value_node.id in parser.ctx.array_literals:
            value = parser.ctx.array_literals[value_node.id]
            # A read-only array (a Constant's, deferred by the printer) is shared as it is.
            value = value.copy() if isinstance(value, np.ndarray) and value.flags.writeable else value
        else:
            value = number_or_list(value_node)
    except NotALiteral as error:
        raise parser.ctx.fail(error.message or "the value of R.const must be a number or a nested list of numbers",
                              error.node) from None
    try:
        if dtype is not None and isinstance(value, (int, float)):
            check_literal(value, dtype)  # numpy's messages name no range
        with np.errstate(over="ignore"):  # an overflow is reported below, at the value
            constant = ir.const(value, dtype)
    except LiteralError as error:
        raise parser.ctx.fail(str(error), value_node) from None
    except (ValueError, TypeError, OverflowError) as error:
        raise parser.ctx.fail(f"invalid constant: {str(error).rstrip('.')}", node) from None
    if not isinstance(value, np.ndarray):  # an array literal of the fast path is already typed
        try:
            check_constant(value, constant.data)
        except LiteralError as error:
            raise parser.ctx.fail(str(error), value_node) from None
    return constant.with_fields(span=parser.ctx.span(node))


def shape(parser, node: ast.Call) -> ir.ShapeExpr:
    bound = bind_arguments(parser, node, "shape", ("values",), ("values",))
    values = bound["values"]
    if not isinstance(values, (ast.List, ast.Tuple)):
        raise parser.ctx.fail("R.shape takes a list of dimensions such as [n, 4]", values)
    return ir.ShapeExpr(parser.shape_dims(values), span=parser.ctx.span(node))


def prim_value(parser, node: ast.Call) -> ir.PrimValue:
    bound = bind_arguments(parser, node, "prim_value", ("value",), ("value",))
    value_node = bound["value"]
    span = parser.ctx.span(node)
    if isinstance(value_node, ast.Constant) and type(value_node.value) in (int, float, bool):
        literal = parser.expr(value_node)
        return literal.with_fields(span=span)
    if isinstance(value_node, ast.UnaryOp) and isinstance(value_node.operand, ast.Constant):
        return parser.expr(value_node).with_fields(span=span)
    return ir.PrimValue(parser.symbolic_value(value_node), span=span)


def shape_expr(parser, node: ast.Call) -> ir.ShapeExpr:
    """`R.ShapeExpr((m, n))`, the constructor's spelling of R.shape."""
    bound = bind_arguments(parser, node, "ShapeExpr", ("values",), ("values",))
    values = bound["values"]
    if not isinstance(values, (ast.List, ast.Tuple)):
        raise parser.ctx.fail("R.ShapeExpr takes a list of dimensions such as [n, 4]", values)
    return ir.ShapeExpr(parser.shape_dims(values), span=parser.ctx.span(node))


def tuple_get_item(parser, node: ast.Call) -> ir.TupleGetItem:
    """`R.TupleGetItem(t, 1)`, the constructor's spelling of t[1]."""
    bound = bind_arguments(parser, node, "TupleGetItem", ("tuple_value", "index"), ("tuple_value", "index"))
    index = bound["index"]
    if not (isinstance(index, ast.Constant) and type(index.value) is int and index.value >= 0):
        raise parser.ctx.fail("a tuple index must be a non-negative integer literal", index)
    return ir.TupleGetItem(parser.expr(bound["tuple_value"]), index.value, span=parser.ctx.span(node))


def _string_argument(parser, node: ast.Call, name: str) -> str:
    bound = bind_arguments(parser, node, name, ("value",), ("value",))
    value = bound["value"]
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        raise parser.ctx.fail(f"R.{name} takes a string literal", value)
    return value.value


def string_imm(parser, node: ast.Call) -> ir.StringImm:
    return ir.StringImm(_string_argument(parser, node, "str"), span=parser.ctx.span(node))


def dtype_imm(parser, node: ast.Call) -> ir.DataTypeImm:
    bound = bind_arguments(parser, node, "dtype", ("value",), ("value",))
    return ir.DataTypeImm(parser.dtype_string(bound["value"], allow_none=True), span=parser.ctx.span(node))


def extern_func(parser, node: ast.Call) -> ir.ExternFunc:
    return ir.ExternFunc(_string_argument(parser, node, "ExternFunc"), span=parser.ctx.span(node))


def make_tuple(parser, node: ast.Call) -> ir.Tuple:
    if node.keywords:
        raise parser.ctx.fail(f"R.tuple has no argument '{node.keywords[0].arg}'", node.keywords[0])
    return ir.Tuple(parser.exprs(parser.positional(node)), span=parser.ctx.span(node))


def _format_string(parser, node: ast.Call, name: str) -> tuple[ir.StringImm, list[ast.keyword]]:
    fmt = ir.StringImm("", span=parser.ctx.span(node))
    others = []
    for keyword in node.keywords:
        if keyword.arg == "format":
            value = parser.expr(keyword.value)
            if not isinstance(value, ir.StringImm):
                raise parser.ctx.fail(f"the format of R.{name} must be a string", keyword.value)
            fmt = value
        else:
            others.append(keyword)
    return fmt, others


def print_op(parser, node: ast.Call) -> ir.Call:
    fmt, others = _format_string(parser, node, "print")
    if others:
        raise parser.ctx.fail(f"R.print has no argument '{others[0].arg}'", others[0])
    args = (fmt, *parser.exprs(parser.positional(node)))
    return ir.Call(ir.Op("relax.print", span=parser.ctx.span(node.func)), args, span=parser.ctx.span(node))


def assert_op(parser, node: ast.Call) -> ir.Call:
    fmt, others = _format_string(parser, node, "assert_op")
    positional = parser.positional(node)
    if not positional:
        raise parser.ctx.fail("R.assert_op needs a condition", node)
    format_args = [parser.expr(a) for a in positional[1:]]
    for keyword in others:
        if keyword.arg != "format_args":
            raise parser.ctx.fail(f"R.assert_op has no argument '{keyword.arg}'", keyword)
        value = parser.expr(keyword.value)
        format_args.extend(value.fields if isinstance(value, ir.Tuple) else (value,))
    args = (parser.expr(positional[0]), fmt, *format_args)
    return ir.Call(ir.Op("relax.assert_op", span=parser.ctx.span(node.func)), args, span=parser.ctx.span(node))


SPECIAL_FORMS = {
    "call_tir": call_tir,
    "call_tir_inplace": call_tir_inplace,
    "call_tir_with_grad": call_tir_with_grad,
    "call_dps_packed": call_dps_packed,
    "call_packed": call_packed,
    "call_pure_packed": _packed_operator("call_pure_packed"),
    "call_inplace_packed": _packed_operator("call_inplace_packed"),
    "call_builtin_with_ctx": _packed_operator("call_builtin_with_ctx"),
    "vm.call_tir_dyn": _packed_operator("vm.call_tir_dyn"),
    "ShapeExpr": shape_expr,
    "TupleGetItem": tuple_get_item,
    "const": const,
    "shape": shape,
    "prim_value": prim_value,
    "str": string_imm,
    "dtype": dtype_imm,
    "ExternFunc": extern_func,
    "tuple": make_tuple,
    "print": print_op,
    "assert_op": assert_op,
    "call_py_func": call_py_func,
}
