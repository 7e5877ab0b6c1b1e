"""Struct info of call_tir, packed calls, memory and shape operators."""

import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def call(op, *args, sinfo=(), **attrs):
    return ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs), tuple(sinfo))


def test_call_tir_takes_out_sinfo():
    out = ir.TensorStructInfo(ir.ShapeExpr((N,)), "float32")
    info = struct_info_of(call("call_tir", ir.GlobalVar("k"), ir.Tuple((tensor((N,)),)), sinfo=[out]))
    assert info is out
    with pytest.raises(DiagnosticError, match=r"needs the struct info of its result \(out_sinfo=...\) in R.call_tir"):
        struct_info_of(call("call_tir", ir.GlobalVar("k"), ir.Tuple((tensor((N,)),))))


def test_allocations_and_kills():
    shape = ir.ShapeExpr((N, tir.IntImm("int64", 4)))
    info = struct_info_of(call("builtin.alloc_tensor", shape, ir.DataTypeImm("float16"),
                               ir.PrimValue(tir.IntImm("int64", 0))))
    assert info.shape is shape and info.dtype == "float16"
    storage = ir.Var("s", ir.ObjectStructInfo())
    info = struct_info_of(call("vm.alloc_tensor", storage, ir.PrimValue(tir.IntImm("int64", 0)), shape,
                               ir.DataTypeImm("float32")))
    assert info.ndim == 2
    killed = struct_info_of(call("vm.kill_object", storage))
    assert isinstance(killed, ir.TupleStructInfo) and killed.fields == ()


def test_shape_conversions():
    info = struct_info_of(call("shape_of", tensor((N, 3))))
    assert info.ndim == 2 and info.values[0] is N
    assert struct_info_of(call("tensor_to_shape", tensor((3,), "int64"))).ndim == 3
    with pytest.raises(DiagnosticError, match="must be a 1-D tensor"):
        struct_info_of(call("tensor_to_shape", tensor((3, 1), "int64")))
    shape_var = ir.Var("s", ir.ShapeStructInfo(ndim=2))
    assert struct_info_of(call("shape_to_tensor", shape_var)).shape_values[0].value == 2
