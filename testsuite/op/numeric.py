"""Runs an operator's legalized kernel on numpy arrays, for tests against numpy.

The kernel runs in the reference TIR interpreter (lib/relax/tir/interpreter.py),
so operator semantics are checked independently of code generation.
"""

from __future__ import annotations

import numpy as np

from relax import ir
from relax.ir import dtype as dt
from relax.ir import tir
from relax.op.infer import bind_call
from relax.op.legalize_context import LegalizeContext
from relax.tir.interpreter import run


def tensor_var(name: str, array: np.ndarray) -> ir.Var:
    dims = tuple(tir.IntImm("int64", d) for d in array.shape)
    return ir.Var(name, ir.TensorStructInfo(ir.ShapeExpr(dims), dt.from_numpy(array.dtype)))


def _static_shape(info) -> tuple[int, ...]:
    return tuple(d.value for d in info.shape_values)


def _argument(index: int, value, arrays: list):
    """A Relax argument for a test value: an array becomes a tensor variable, a list of
    arrays a tuple of them; IR expressions (shapes, prim values) pass through."""
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return tensor_var(f"x{index}", value)
    if isinstance(value, list):
        return ir.Tuple(tuple(_argument(index * 10 + k, v, arrays) for k, v in enumerate(value)))
    return value


def run_op(op_name: str, *values, **attrs):
    """The outputs of `R.<op_name>(*values, **attrs)` computed by its legalized kernel."""
    arrays: list[np.ndarray] = []
    args = tuple(_argument(i, v, arrays) for i, v in enumerate(values))
    call = ir.Call(ir.Op(f"relax.{op_name}"), args, ir.FrozenDict(attrs))
    bound = bind_call(call)
    context = LegalizeContext()
    legalized = bound.op.legalize(bound, context)
    assert legalized is not None, f"{op_name} did not legalize"
    func = context.new_functions[legalized.args[0].name_hint]
    out_info = legalized.sinfo_args[0]
    infos = out_info.fields if isinstance(out_info, ir.TupleStructInfo) else (out_info,)
    outputs = [np.zeros(_static_shape(info), dt.to_numpy(info.dtype)) for info in infos]
    run(func, *[np.require(a, requirements="C") for a in arrays], *outputs)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def tensor(name: str, dims, dtype: str = "float32") -> ir.Var:
    """A tensor variable of shape `dims` (ints or PrimExprs), for inference tests."""
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var(name, ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def call(op: str, *args, **attrs) -> ir.Call:
    """`R.<op>(*args, **attrs)` as an IR call."""
    return ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs))


def dims_of(info) -> list:
    """An inferred shape as ints where static, PrimExprs where symbolic."""
    return [d.value if isinstance(d, tir.IntImm) else d for d in info.shape_values]


def prim(value, dtype: str = "int64") -> ir.PrimValue:
    """`R.prim_value(value)` of an int or a float."""
    return ir.PrimValue(tir.IntImm(dtype, value) if isinstance(value, int) else tir.FloatImm(dtype, value))
