"""Struct info of Relax expressions, and binding of operator calls to their OpDef.

`bind_call` turns a parsed `Call(Op(...))` into an OpCall: it finds the operator
(suggesting the nearest name when unknown), matches positional and keyword
arguments against the signature, fills attribute defaults and runs their checks.
`struct_info_of` gives the struct info of any expression, inferring calls.
"""

from __future__ import annotations

from ..diagnostics import DiagnosticError, error, note
from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.node import FrozenDict
from ..ir.struct_info import (
    FuncStructInfo, ObjectStructInfo, PrimStructInfo, ShapeStructInfo, StructInfo,
    TensorStructInfo, TupleStructInfo,
)
from . import registry
from .call_ret import derive_call_ret
from .canonical import canonical_struct_info
from .registry import REQUIRED, OpCall


def literal_of(value: rx.Expr | object) -> object:
    """The Python value of a literal Relax expression used where an attribute is expected."""
    if isinstance(value, rx.PrimValue) and isinstance(value.value, (tir.IntImm, tir.FloatImm)):
        return value.value.value
    if isinstance(value, rx.StringImm):
        return value.value
    if isinstance(value, rx.DataTypeImm):
        return value.value
    if isinstance(value, rx.Tuple):
        return tuple(literal_of(field) for field in value.fields)
    if isinstance(value, rx.ShapeExpr):
        return tuple(v.value if isinstance(v, tir.IntImm) else v for v in value.values)
    if isinstance(value, list):
        return tuple(literal_of(v) for v in value)
    return value


def _op_name(call: rx.Call) -> str:
    return call.op.name  # type: ignore[union-attr]


def bind_call(call: rx.Call, module=None) -> OpCall:
    """Matches a call's arguments to its operator's signature."""
    op = _lookup(call)
    attrs_given = dict(call.attrs)
    args = _bind_positional(op, call, attrs_given)
    attrs = _bind_attrs(op, call, attrs_given)
    arg_info = tuple(struct_info_of(arg, module) for arg in args)
    return OpCall(op, call, args, arg_info, FrozenDict(attrs))


def _lookup(call: rx.Call):
    """The operator a call names, or an error suggesting the closest name."""
    name = _op_name(call)
    op = registry.get(name)
    if op is None:
        short = "R." + name.removeprefix("relax.")
        hint = registry.suggest(name)
        message = f"unknown operator '{short}'"
        if hint is not None:
            message += f"; did you mean 'R.{hint.removeprefix('relax.')}'?"
        raise error(message, call.span)
    return op


def _bind_positional(op, call: rx.Call, attrs_given: dict) -> tuple:
    """The call's arguments in signature order. Keywords naming an argument are taken out of
    `attrs_given`; extra positional values go into it as the attributes not given, in order."""
    variadic = bool(op.args) and op.args[-1].startswith("*")
    fixed = op.args[:-1] if variadic else op.args
    positional = list(call.args)
    # A keyword naming a positional argument is that argument.
    for index, arg_name in enumerate(fixed):
        if arg_name in attrs_given and index >= len(positional):
            if len(positional) < index:
                raise error(f"{op.script_name} is missing argument '{fixed[len(positional)]}'", call.span)
            positional.append(_as_expr(attrs_given.pop(arg_name), op, arg_name, call))
    if not variadic and len(positional) > len(fixed):
        # Extra positional values fill attributes in order (`R.permute_dims(x, [1, 0])`).
        extra = positional[len(fixed):]
        positional = positional[: len(fixed)]
        free_attrs = [a for a in op.attrs if a.name not in attrs_given]
        if len(extra) > len(free_attrs):
            raise error(
                f"{op.script_name} takes {len(fixed)} argument{'s' if len(fixed) != 1 else ''}"
                f" but {len(call.args)} were given",
                call.span,
            )
        for spec, value in zip(free_attrs, extra):
            attrs_given[spec.name] = literal_of(value)
    if len(positional) < len(fixed):
        missing = fixed[len(positional)]
        raise error(f"{op.script_name} is missing argument '{missing}'", call.span)
    return tuple(positional)


def _bind_attrs(op, call: rx.Call, attrs_given: dict) -> dict:
    """Every attribute of the operator: given (as a literal) or its default, each checked."""
    known = {spec.name for spec in op.attrs}
    for key in attrs_given:
        if key not in known:
            valid = ", ".join(sorted(known)) or "none"
            raise error(f"{op.script_name} has no attribute '{key}' (attributes: {valid})", call.span)
    attrs = {}
    for spec in op.attrs:
        if spec.name in attrs_given:
            value = literal_of(attrs_given[spec.name])
        elif spec.default is REQUIRED:
            raise error(f"{op.script_name} needs attribute '{spec.name}'", call.span)
        else:
            value = spec.default
        problem = spec.problem(value)
        if problem:
            raise error(f"{op.script_name}: bad value {value!r} for '{spec.name}': {problem}", call.span)
        attrs[spec.name] = value
    return attrs


def _as_expr(value, op, arg_name: str, call: rx.Call) -> rx.Expr:
    """A keyword naming an argument, as the parser makes the same value written positionally:
    `axes=[1]` is the tuple `(R.prim_value(1),)`, as `[1]` would be."""
    if isinstance(value, rx.Expr):
        return value
    if isinstance(value, tir.PrimExpr):
        return rx.PrimValue(value)
    if isinstance(value, bool):
        return rx.PrimValue(tir.IntImm("bool", int(value)))
    if isinstance(value, int):
        return rx.PrimValue(tir.IntImm("int64", value))
    if isinstance(value, float):
        return rx.PrimValue(tir.FloatImm("float64", value))
    if isinstance(value, str):
        return rx.StringImm(value)
    if isinstance(value, (tuple, list)):
        return rx.Tuple(tuple(_as_expr(item, op, arg_name, call) for item in value))
    raise error(f"{op.script_name}: argument '{arg_name}' must be a Relax expression, got {value!r}", call.span)


def infer_call(call: rx.Call, module=None) -> StructInfo:
    callee = call.op
    if isinstance(callee, rx.Op):
        bound = bind_call(call, module)
        try:
            # Sizes in canonical form (n * 2, not n + n): what later passes bind and compare.
            return canonical_struct_info(bound.op.infer(bound))
        except ValueError:  # an operand of a data type the parser reads but ir.dtype does not know
            _refuse_unknown_dtype(call)
            raise
    if isinstance(callee, rx.ExternFunc):
        return call.sinfo_args[0] if call.sinfo_args else ObjectStructInfo()
    callee_info = struct_info_of(callee, module)
    if isinstance(callee_info, FuncStructInfo):
        # The callee's sizes bound to the arguments': its own n never reaches the caller.
        return derive_call_ret(callee_info, [_arg_info(arg, module) for arg in call.args])
    return ObjectStructInfo()


def _arg_info(arg: rx.Expr, module):
    """What an argument's struct info binds the callee's sizes to; None when it has none
    yet (an argument without struct info is reported where it is inferred)."""
    try:
        return struct_info_of(arg, module)
    except DiagnosticError:
        return None


def _refuse_unknown_dtype(call: rx.Call) -> None:
    """The error for an operand whose data type TVM spells but relaxc cannot compute on
    (R.Tensor((4,), "float8_e4m3fn")), at the call, with a note at the annotation."""
    operands = [item for arg in call.args for item in (arg.fields if isinstance(arg, rx.Tuple) else (arg,))]
    for var in operands:
        info = var.struct_info if isinstance(var, rx.Var) else None
        for leaf in info.fields if isinstance(info, TupleStructInfo) else (info,):
            if isinstance(leaf, (TensorStructInfo, PrimStructInfo)) and leaf.dtype != "void" \
                    and not dt.is_valid(leaf.dtype):
                name = "R." + _op_name(call).removeprefix("relax.")
                raise error(f"{name} cannot compute on the data type '{leaf.dtype}' of '{var.name_hint}';"
                            f" the supported ones are {', '.join(dt.SUPPORTED_NUMPY)}", call.span,
                            [note(f"'{var.name_hint}' is declared here", leaf.span)] if leaf.span else [])


def struct_info_of(expr: rx.Expr, module=None) -> StructInfo:
    """The struct info of an expression; calls are inferred through the registry."""
    if isinstance(expr, rx.Var):
        if expr.struct_info is None:
            raise error(f"variable '{expr.name_hint}' has no struct info", expr.span)
        return expr.struct_info
    if isinstance(expr, (rx.Constant, rx.ShapeExpr, rx.PrimValue, rx.StringImm, rx.DataTypeImm)):
        return expr.struct_info
    if isinstance(expr, rx.Tuple):
        return TupleStructInfo(tuple(struct_info_of(f, module) for f in expr.fields))
    if isinstance(expr, rx.TupleGetItem):
        info = struct_info_of(expr.tuple_value, module)
        if isinstance(info, TupleStructInfo):
            if not 0 <= expr.index < len(info.fields):
                raise error(f"index {expr.index} out of range for a tuple of {len(info.fields)}", expr.span)
            return info.fields[expr.index]
        return ObjectStructInfo()
    if isinstance(expr, rx.Call):
        return infer_call(expr, module)
    if isinstance(expr, rx.SeqExpr):
        return struct_info_of(expr.body, module)
    if isinstance(expr, rx.If):
        return struct_info_of(expr.true_branch, module)
    if isinstance(expr, rx.Function):
        params = tuple(p.struct_info or ObjectStructInfo() for p in expr.params)
        return FuncStructInfo(params, expr.ret_struct_info or ObjectStructInfo(), expr.is_pure)
    if isinstance(expr, rx.GlobalVar) and module is not None and expr.name_hint in module:
        func = module[expr.name_hint]
        if isinstance(func, rx.Function):
            return struct_info_of(func, module)
    return ObjectStructInfo()


__all__ = [
    "bind_call", "infer_call", "struct_info_of", "literal_of",
    "TensorStructInfo", "ShapeStructInfo", "PrimStructInfo", "DiagnosticError",
]
