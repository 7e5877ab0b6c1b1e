"""Struct-info inference of reductions, softmax, norms and matrix products."""

import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [d.value if isinstance(d, tir.IntImm) else d for d in info.shape_values]


def test_matmul_symbolic_rows():
    info = infer("matmul", tensor((N, 4)), tensor((4, 8)))
    assert dims(info) == [N, 8] and info.dtype == "float32"


def test_matmul_batch_broadcast_and_vectors():
    assert dims(infer("matmul", tensor((2, 1, 3, 4)), tensor((5, 4, 6)))) == [2, 5, 3, 6]
    assert dims(infer("matmul", tensor((4,)), tensor((4, 6)))) == [6]
    assert dims(infer("matmul", tensor((4,)), tensor((4,)))) == []


def test_matmul_errors():
    with pytest.raises(DiagnosticError, match=r"reduction dimensions differ: \(3, 4\) @ \(5, 6\) in R.matmul"):
        infer("matmul", tensor((3, 4)), tensor((5, 6)))
    with pytest.raises(DiagnosticError, match="must be equal unless out_dtype"):
        infer("matmul", tensor((3, 4)), tensor((4, 6), "float16"))
    assert infer("matmul", tensor((3, 4), "int8"), tensor((4, 6), "int8"), out_dtype="int32").dtype == "int32"


def test_linear():
    assert dims(infer("linear", tensor((N, 4)), tensor((8, 4)), tensor((8,)))) == [N, 8]


@pytest.mark.parametrize("axis, keepdims, expected", [
    (None, False, []), ((1,), False, [N, 5]), ((1,), True, [N, 1, 5]), (-1, False, [N, 4]), ((0, 2), True, [1, 4, 1]),
])
def test_reduction_shapes(axis, keepdims, expected):
    assert dims(infer("sum", tensor((N, 4, 5)), axis=axis, keepdims=keepdims)) == expected


def test_reduction_errors():
    with pytest.raises(DiagnosticError, match="axis 3 is out of range for a tensor of rank 3 in R.sum"):
        infer("sum", tensor((2, 3, 4)), axis=[3])
    with pytest.raises(DiagnosticError, match="repeats an axis"):
        infer("max", tensor((2, 3)), axis=[1, -1])
    assert infer("argmax", tensor((2, 3)), axis=1).dtype == "int64"


def test_softmax_and_layer_norm():
    assert dims(infer("nn.softmax", tensor((N, 10)), axis=-1)) == [N, 10]
    with pytest.raises(DiagnosticError, match="floating-point"):
        infer("nn.softmax", tensor((2,), "int32"))
    info = infer("nn.layer_norm", tensor((2, 8)), tensor((8,)), tensor((8,)), axes=[-1], epsilon=1e-5)
    assert dims(info) == [2, 8]
    with pytest.raises(DiagnosticError, match="must have rank 1"):
        infer("nn.layer_norm", tensor((2, 8)), tensor((2, 8)), tensor((8,)), axes=[-1])
