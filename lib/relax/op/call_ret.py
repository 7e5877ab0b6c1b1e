"""The struct info of a call of a Relax function, in the caller's own terms.

A callee's return struct info names the callee's symbolic sizes: `scale(x: R.Tensor(("n", 4)))
-> R.Tensor(("n", 4))` returns a tensor of *its* n. Called as `scale(b)` with `b` of shape
(m, 4), the result has shape (m, 4): each bare size of a parameter's struct info is bound to
what the argument's struct info has there, and the return struct info is rewritten with
those bindings (TVM's DeriveCallRetStructInfo). Returning the callee's n unchanged would put
a variable the caller never defines into the caller's struct info: the kernels legalized
from it then get two different variables named n, one of them never bound.

A size of the callee's signature that the arguments do not give (the argument's shape is
unknown, or the parameter spells it n * 2) is erased from the result, its rank kept (TVM's
EraseToWellDefined). A variable the signature does not define (a size a local function
captures from the caller) is the caller's own and stays.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.analysis import collect
from ..ir.struct_info import (
    FuncStructInfo, PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo,
)
from .canonical import canonical_struct_info
from ..tir.rewrite import substitute


def derive_call_ret(callee: FuncStructInfo, arg_infos) -> StructInfo:
    """`callee.ret` with the callee's symbolic sizes replaced by the arguments' sizes."""
    bound: dict[tir.Var, tir.PrimExpr] = {}  # tir.Var hashes by identity
    for param, arg in zip(callee.params, arg_infos):
        _bind(param, arg, bound)
    own = {v for p in callee.params for v in collect(p, lambda n: isinstance(n, tir.Var))}
    unbound = {id(v) for v in own if v not in bound}
    if not bound and not unbound:
        return callee.ret
    return canonical_struct_info(_rewrite(callee.ret, bound, unbound))


def _bind_dims(params, args, bound: dict) -> None:
    if params is None or args is None or len(params) != len(args):
        return
    for param, arg in zip(params, args):
        if isinstance(param, tir.Var) and param not in bound and param.dtype == arg.dtype:
            bound[param] = arg


def _bind(param: StructInfo, arg, bound: dict) -> None:
    """Binds the bare sizes of `param` to the values at the same places in `arg`."""
    if isinstance(param, TensorStructInfo) and isinstance(arg, TensorStructInfo):
        _bind_dims(param.shape_values, arg.shape_values, bound)
    elif isinstance(param, ShapeStructInfo) and isinstance(arg, ShapeStructInfo):
        _bind_dims(param.values, arg.values, bound)
    elif isinstance(param, PrimStructInfo) and isinstance(arg, PrimStructInfo) and arg.value is not None:
        _bind_dims((param.value,), (arg.value,), bound)
    elif isinstance(param, TupleStructInfo) and isinstance(arg, TupleStructInfo):
        for p, a in zip(param.fields, arg.fields):
            _bind(p, a, bound)


def _dims(values, bound: dict, unbound: set):
    """`values` rewritten, or None when one names a size no argument gives."""
    if any(id(v) in unbound for d in values for v in collect(d, lambda n: isinstance(n, tir.Var))):
        return None
    new = tuple(substitute(d, bound) for d in values)
    return values if all(a is b for a, b in zip(new, values)) else new


def _rewrite(info: StructInfo, bound: dict, unbound: set) -> StructInfo:
    if isinstance(info, TensorStructInfo) and info.shape_values is not None:
        values = _dims(info.shape_values, bound, unbound)
        if values is None:
            return TensorStructInfo(None, info.dtype, info.ndim, info.vdevice)
        return info if values is info.shape_values else info.with_fields(shape=info.shape.with_fields(values=values))
    if isinstance(info, ShapeStructInfo) and info.values is not None:
        values = _dims(info.values, bound, unbound)
        if values is None:
            return ShapeStructInfo(ndim=info.ndim)
        return info if values is info.values else info.with_fields(values=values)
    if isinstance(info, PrimStructInfo) and info.value is not None:
        values = _dims((info.value,), bound, unbound)
        if values is None:
            return PrimStructInfo(info.dtype)
        return info if values[0] is info.value else info.with_fields(value=values[0])
    if isinstance(info, TupleStructInfo):
        fields = tuple(_rewrite(f, bound, unbound) for f in info.fields)
        return info if all(a is b for a, b in zip(fields, info.fields)) else info.with_fields(fields=fields)
    return info
