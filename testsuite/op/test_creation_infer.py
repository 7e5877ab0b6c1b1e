"""Struct-info inference of creation operators, astype and where."""

import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")


def i64(v):
    return v if isinstance(v, tir.PrimExpr) else tir.IntImm("int64", v)


def tensor(dims, dtype="float32"):
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(tuple(i64(d) for d in dims)), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def test_zeros_and_full():
    info = infer("zeros", ir.ShapeExpr((N, i64(3))), dtype="int32")
    assert info.shape_values[0] is N and info.dtype == "int32"
    full = infer("full", ir.ShapeExpr((i64(2),)), ir.const(1.5, "float32"))
    assert full.dtype == "float32"


def test_like_forms_keep_the_template_shape():
    template = tensor((N, 4))
    info = infer("ones_like", template, dtype="float16")
    assert info.shape is template.struct_info.shape and info.dtype == "float16"


def test_arange_length():
    value = infer("arange", ir.PrimValue(i64(1)), ir.PrimValue(i64(10)), ir.PrimValue(i64(4)))
    assert value.shape_values[0].value == 3 and value.dtype == "int64"
    with pytest.raises(DiagnosticError, match="step cannot be 0"):
        infer("arange", ir.PrimValue(i64(1)), ir.PrimValue(i64(10)), ir.PrimValue(i64(0)))


def test_astype_where_and_triangles():
    assert infer("astype", tensor((2,)), dtype="int8").dtype == "int8"
    with pytest.raises(DiagnosticError, match="bad value 'int7' for 'dtype'"):
        infer("astype", tensor((2,)), dtype="int7")
    info = infer("where", tensor((3, 1), "bool"), tensor((1, 4)), tensor((4,)))
    assert [d.value for d in info.shape_values] == [3, 4]
    with pytest.raises(DiagnosticError, match="condition must be a bool tensor"):
        infer("where", tensor((3,)), tensor((3,)), tensor((3,)))
    with pytest.raises(DiagnosticError, match="rank 2 or more"):
        infer("tril", tensor((3,)))
