"""Struct info and errors of cumsum, gather/scatter_elements, one_hot and einsum."""

import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of


def tensor(dims, dtype="float32"):
    dims = tuple(tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [d.value for d in info.shape_values]


def test_shapes():
    assert dims(infer("cumsum", tensor((2, 3)), axis=None)) == [6]
    assert infer("cumsum", tensor((2, 3), "int32"), axis=1, dtype="int64").dtype == "int64"
    assert dims(infer("gather_elements", tensor((3, 4)), tensor((2, 4), "int64"), axis=0)) == [2, 4]
    assert dims(infer("one_hot", tensor((5,), "int32"), tensor(()), tensor(()), depth=3, axis=0)) == [3, 5]
    operands = ir.Tuple((tensor((2, 3)), tensor((3, 4))))
    assert dims(infer("einsum", operands, subscripts="ij,jk->ik")) == [2, 4]
    assert dims(infer("einsum", operands, subscripts="ij,jk")) == [2, 4]


def test_errors():
    with pytest.raises(DiagnosticError, match="indices must be integers"):
        infer("gather_elements", tensor((3,)), tensor((3,)))
    with pytest.raises(DiagnosticError, match="reduction must be one of update, add"):
        infer("scatter_elements", tensor((3,)), tensor((3,), "int64"), tensor((3,)), reduction="avg")
    with pytest.raises(DiagnosticError, match="subscript 'ijk' does not match an operand of rank 2"):
        infer("einsum", ir.Tuple((tensor((2, 3)),)), subscripts="ijk->i")
    with pytest.raises(DiagnosticError, match="subscript 'j' has sizes"):
        infer("einsum", ir.Tuple((tensor((2, 3)), tensor((4, 5)))), subscripts="ij,jk->ik")
