"""Struct-info inference and attribute checks of R.nn.max_pool2d, avg_pool2d and
adaptive_avg_pool2d (expected shapes as TVM 0.27 infers them)."""

import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of
from relax.op.legalize_context import substitute_prim
from relax.tir.arith import simplify_expr

H, W = tir.Var("h", "int64"), tir.Var("w", "int64")


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [d.value if isinstance(d, tir.IntImm) else d for d in info.shape_values]


def agrees(size, formula, var=H) -> bool:
    for value in range(1, 14):
        folded = simplify_expr(substitute_prim(size, {id(var): tir.IntImm("int64", value)}))
        if not isinstance(folded, tir.IntImm) or folded.value != formula(value):
            return False
    return True


@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("attrs, expected", [
    ({}, [1, 2, 7, 6]),
    ({"pool_size": 2, "strides": 2}, [1, 2, 3, 3]),
    ({"pool_size": (2, 2), "strides": (2, 2), "ceil_mode": True}, [1, 2, 4, 3]),
    ({"pool_size": 3, "strides": 2, "padding": 1, "dilation": 2}, [1, 2, 3, 2]),
    # ceil_mode drops a last window that would start in the padding (TVM and PyTorch).
    ({"pool_size": (3, 2), "strides": (2, 3), "padding": (1, 0, 2, 1), "ceil_mode": True}, [1, 2, 4, 2]),
])
def test_pool_static_shapes(op, attrs, expected):
    assert dims(infer(f"nn.{op}", tensor((1, 2, 7, 6)), **attrs)) == expected


def test_pool_nhwc():
    info = infer("nn.max_pool2d", tensor((1, 7, 6, 2)), pool_size=3, strides=2, padding=1, layout="NHWC")
    assert dims(info) == [1, 4, 3, 2]
    info = infer("nn.max_pool2d", tensor((1, 7, 6, 2)), pool_size=3, layout="NHWC", out_layout="NCHW")
    assert dims(info) == [1, 2, 5, 4]


def test_pool_symbolic_sizes():
    h, w = dims(infer("nn.avg_pool2d", tensor((1, 2, H, W)), pool_size=3, strides=2, padding=1))[2:]
    assert agrees(h, lambda v: (v - 1) // 2 + 1) and agrees(w, lambda v: (v - 1) // 2 + 1, W)
    h, w = dims(infer("nn.max_pool2d", tensor((1, 2, H, W)), pool_size=(3, 2), strides=(2, 3),
                      padding=(1, 0, 2, 1), ceil_mode=True))[2:]

    def ceil_then_drop(size, kernel, stride, before, after):
        count = (size + before + after - kernel + stride - 1) // stride + 1
        return count - 1 if (count - 1) * stride >= size + before else count

    assert agrees(h, lambda v: ceil_then_drop(v, 3, 2, 1, 2))
    assert agrees(w, lambda v: ceil_then_drop(v, 2, 3, 0, 1), W)


@pytest.mark.parametrize("output_size, expected", [(None, [1, 2, 7, 6]), (1, [1, 2, 1, 1]), ((3,), [1, 2, 3, 3]),
                                                   ((2, 4), [1, 2, 2, 4])])
def test_adaptive_avg_pool2d_shapes(output_size, expected):
    assert dims(infer("nn.adaptive_avg_pool2d", tensor((1, 2, 7, 6)), output_size=output_size)) == expected


def test_adaptive_avg_pool2d_nhwc_and_symbolic():
    info = infer("nn.adaptive_avg_pool2d", tensor((1, 7, 6, 2)), output_size=(3, 4), layout="NHWC")
    assert dims(info) == [1, 3, 4, 2]
    assert dims(infer("nn.adaptive_avg_pool2d", tensor((1, 2, H, W)), output_size=(3, 4))) == [1, 2, 3, 4]
    assert dims(infer("nn.adaptive_avg_pool2d", tensor((1, 2, H, W)))) == [1, 2, H, W]


@pytest.mark.parametrize("data, attrs, message", [
    ((1, 2, 7), {}, "data must have rank 4, got rank 3 in R.nn.max_pool2d"),
    ((1, 2, 2, 2), {"pool_size": 3}, "the output would be empty"),
    ((1, 2, 7, 6), {"pool_size": (1, 2, 3)}, "expected 1 or 2 values, got 3"),
    ((1, 2, 7, 6), {"strides": 0}, "values must be at least 1"),
    ((1, 2, 7, 6), {"padding": (1, 1, 1)}, "expected 1 or 2 or 4 values, got 3"),
    ((1, 2, 7, 6), {"layout": "NCDHW"}, "expected a permutation of 'NCHW'"),
])
def test_pool_errors(data, attrs, message):
    with pytest.raises(DiagnosticError, match=message):
        infer("nn.max_pool2d", tensor(data), **attrs)


def test_adaptive_avg_pool2d_errors():
    with pytest.raises(DiagnosticError, match="expected 1 or 2 values, got 3"):
        infer("nn.adaptive_avg_pool2d", tensor((1, 2, 7, 6)), output_size=(1, 2, 3))
