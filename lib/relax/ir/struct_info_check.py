"""Struct-info annotations that contradict what a value plainly is.

Used by the well-formedness checker, which has no operator registry: only values
whose struct info is known without one are judged (constants, shapes, prim values,
tuples of those, variables, functions, tuple items of known tuples). A less
precise annotation (R.Object, unknown ndim or dtype) never conflicts; contradictions
of kind, dtype, ndim, static dimension or tuple arity do.
"""

from __future__ import annotations

from . import expr as rx
from . import struct_info as si
from . import tir_expr as tir


def known_struct_info(value: rx.Expr) -> si.StructInfo | None:
    """The struct info of `value` when it follows from the value alone, else None."""
    if isinstance(value, (rx.Constant, rx.ShapeExpr, rx.PrimValue)):
        return value.struct_info
    if isinstance(value, rx.Var):
        return value.struct_info
    if isinstance(value, rx.Tuple):
        fields = tuple(known_struct_info(field) or si.ObjectStructInfo() for field in value.fields)
        return si.TupleStructInfo(fields)
    if isinstance(value, rx.TupleGetItem):
        whole = known_struct_info(value.tuple_value)
        if isinstance(whole, si.TupleStructInfo) and 0 <= value.index < len(whole.fields):
            return whole.fields[value.index]
        return None
    if isinstance(value, rx.Function):
        params = tuple(p.struct_info or si.ObjectStructInfo() for p in value.params)
        return si.FuncStructInfo(params, value.ret_struct_info or si.ObjectStructInfo(), value.is_pure)
    return None


def conflict(annotation: si.StructInfo | None, actual: si.StructInfo | None) -> bool:
    """Whether a value of struct info `actual` can never match `annotation`."""
    if annotation is None or actual is None:
        return False
    if isinstance(annotation, si.ObjectStructInfo) or isinstance(actual, si.ObjectStructInfo):
        return False
    if isinstance(annotation, si.TensorStructInfo) and isinstance(actual, si.TensorStructInfo):
        return _tensor(annotation, actual)  # a DTensor is its global tensor to an operator
    if type(annotation) is not type(actual):
        return True
    check = _CHECKS.get(type(annotation))
    return check(annotation, actual) if check else False


def _differ(a, b, unknown) -> bool:
    return a != unknown and b != unknown and a != b


def _dims_conflict(a, b) -> bool:
    if a is None or b is None:
        return False
    if len(a) != len(b):
        return True
    return any(isinstance(x, tir.IntImm) and isinstance(y, tir.IntImm) and x.value != y.value for x, y in zip(a, b))


def _tensor(a: si.TensorStructInfo, b: si.TensorStructInfo) -> bool:
    return (_differ(a.dtype, b.dtype, "void") or _differ(a.ndim, b.ndim, -1)
            or _dims_conflict(a.shape_values, b.shape_values))


def _shape(a: si.ShapeStructInfo, b: si.ShapeStructInfo) -> bool:
    return _differ(a.ndim, b.ndim, -1) or _dims_conflict(a.values, b.values)


def _prim(a: si.PrimStructInfo, b: si.PrimStructInfo) -> bool:
    if _differ(a.dtype, b.dtype, "void"):
        return True
    return (isinstance(a.value, tir.IntImm) and isinstance(b.value, tir.IntImm)
            and a.value.value != b.value.value)


def _tuple(a: si.TupleStructInfo, b: si.TupleStructInfo) -> bool:
    if len(a.fields) != len(b.fields):
        return True
    return any(conflict(x, y) for x, y in zip(a.fields, b.fields))


def _func(a: si.FuncStructInfo, b: si.FuncStructInfo) -> bool:
    return a.params is not None and b.params is not None and len(a.params) != len(b.params)


_CHECKS = {
    si.TensorStructInfo: _tensor,
    si.ShapeStructInfo: _shape,
    si.PrimStructInfo: _prim,
    si.TupleStructInfo: _tuple,
    si.FuncStructInfo: _func,
}


def describe(info: si.StructInfo | None) -> str:
    """A short TVMScript-like spelling of struct info for diagnostics."""
    if info is None or isinstance(info, si.ObjectStructInfo):
        return "R.Object"
    if isinstance(info, si.TensorStructInfo):
        dtype = f'dtype="{info.dtype}"' if info.dtype != "void" else ""
        if info.shape_values is not None:
            shape = _dims(info.shape_values)
        elif isinstance(info.shape, rx.Var):
            shape = info.shape.name_hint
        else:
            shape = f"ndim={info.ndim}" if info.ndim != -1 else ""
        return "R.Tensor(" + ", ".join(part for part in (shape, dtype) if part) + ")"
    if isinstance(info, si.ShapeStructInfo):
        if info.values is not None:
            return "R.Shape([" + ", ".join(_dim(v) for v in info.values) + "])"
        return f"R.Shape(ndim={info.ndim})" if info.ndim != -1 else "R.Shape"
    if isinstance(info, si.PrimStructInfo):
        return f'R.Prim("{info.dtype}")' if info.value is None else f"R.Prim(value={_dim(info.value)})"
    if isinstance(info, si.TupleStructInfo):
        return "R.Tuple(" + ", ".join(describe(field) for field in info.fields) + ")"
    return "R.Callable"


def _dims(values) -> str:
    inner = ", ".join(_dim(v) for v in values)
    return f"({inner},)" if len(values) == 1 else f"({inner})"


def _dim(value) -> str:
    if isinstance(value, tir.IntImm):
        return str(value.value)
    if isinstance(value, tir.Var):
        return value.name
    return "?"
