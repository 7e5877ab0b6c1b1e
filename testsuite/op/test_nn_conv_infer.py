"""Struct-info inference and attribute checks of R.nn.conv1d, conv2d and conv2d_transpose
(expected shapes as TVM 0.27 infers them)."""

import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of
from relax.op.legalize_context import substitute_prim
from relax.tir.arith import simplify_expr

N, H, W = tir.Var("n", "int64"), tir.Var("h", "int64"), tir.Var("w", "int64")


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [d.value if isinstance(d, tir.IntImm) else d for d in info.shape_values]


def agrees(size, formula, var=H) -> bool:
    """An inferred symbolic size equals `formula(value)` for several values of `var`."""
    for value in range(1, 12):
        folded = simplify_expr(substitute_prim(size, {id(var): tir.IntImm("int64", value)}))
        if not isinstance(folded, tir.IntImm) or folded.value != formula(value):
            return False
    return True


@pytest.mark.parametrize("attrs, expected", [
    ({}, [1, 4, 3, 3]),
    ({"padding": 1}, [1, 4, 5, 5]),
    ({"padding": (1, 2)}, [1, 4, 5, 7]),
    ({"padding": (1, 0, 2, 1), "strides": (2, 1)}, [1, 4, 3, 4]),
    ({"dilation": 2}, [1, 4, 1, 1]),
    ({"strides": 2, "padding": 1}, [1, 4, 3, 3]),
])
def test_conv2d_static_shapes(attrs, expected):
    assert dims(infer("nn.conv2d", tensor((1, 2, 5, 5)), tensor((4, 2, 3, 3)), **attrs)) == expected


def test_conv2d_symbolic_sizes():
    info = infer("nn.conv2d", tensor((N, 2, H, W)), tensor((4, 2, 3, 3)), strides=2, padding=1)
    n, c, h, w = dims(info)
    assert n is N and c == 4
    # TVM prints (h - 1) // 2 + 1; any equal form will do.
    assert agrees(h, lambda v: (v - 1) // 2 + 1) and agrees(w, lambda v: (v - 1) // 2 + 1, W)
    h = dims(infer("nn.conv2d", tensor((N, 2, H, W)), tensor((4, 2, 3, 3))))[2]
    assert agrees(h, lambda v: v - 2)


def test_conv2d_nhwc_hwio_and_out_layout():
    info = infer("nn.conv2d", tensor((1, 5, 5, 2)), tensor((3, 3, 2, 6)), data_layout="NHWC", kernel_layout="HWIO")
    assert dims(info) == [1, 3, 3, 6]
    info = infer("nn.conv2d", tensor((1, 5, 5, 2)), tensor((3, 3, 2, 6)), data_layout="NHWC",
                 kernel_layout="HWIO", out_layout="NCHW")
    assert dims(info) == [1, 6, 3, 3]


def test_grouped_and_depthwise():
    assert dims(infer("nn.conv2d", tensor((1, 4, 5, 5)), tensor((4, 2, 3, 3)), groups=2)) == [1, 4, 3, 3]
    assert dims(infer("nn.conv2d", tensor((1, 4, 5, 5)), tensor((8, 1, 3, 3)), groups=4)) == [1, 8, 3, 3]


def test_out_dtype():
    info = infer("nn.conv2d", tensor((1, 2, 5, 5), "int8"), tensor((4, 2, 3, 3), "int8"), out_dtype="int32")
    assert info.dtype == "int32"
    assert infer("nn.conv2d", tensor((1, 2, 5, 5)), tensor((4, 2, 3, 3))).dtype == "float32"


def test_conv1d_shapes():
    assert dims(infer("nn.conv1d", tensor((1, 2, 7)), tensor((3, 2, 3)))) == [1, 3, 5]
    assert dims(infer("nn.conv1d", tensor((1, 2, 7)), tensor((3, 2, 3)), strides=2, padding=1)) == [1, 3, 4]
    assert dims(infer("nn.conv1d", tensor((1, 4, 7)), tensor((4, 2, 3)), padding=(2, 0), dilation=2,
                      groups=2)) == [1, 4, 5]


@pytest.mark.parametrize("attrs, expected", [
    ({}, [1, 3, 7, 7]),
    ({"strides": 2, "padding": 1, "output_padding": 1}, [1, 3, 10, 10]),
    ({"strides": (2, 1), "padding": (1, 0, 0, 1), "dilation": (1, 2)}, [1, 3, 10, 8]),
])
def test_conv2d_transpose_shapes(attrs, expected):
    assert dims(infer("nn.conv2d_transpose", tensor((1, 2, 5, 5)), tensor((2, 3, 3, 3)), **attrs)) == expected


def test_conv2d_transpose_symbolic():
    info = infer("nn.conv2d_transpose", tensor((N, 2, H, W)), tensor((2, 3, 3, 3)), strides=2, padding=1,
                 output_padding=1)
    assert agrees(dims(info)[2], lambda v: 2 * v) and agrees(dims(info)[3], lambda v: 2 * v, W)


def test_unknown_shape_keeps_rank():
    data = ir.Var("x", ir.TensorStructInfo(None, "float32", 4))
    info = infer("nn.conv2d", data, tensor((4, 2, 3, 3)))
    assert info.shape_values is None and info.ndim == 4


@pytest.mark.parametrize("data, weight, attrs, message", [
    ((1, 2, 5, 5), (4, 3, 3, 3), {}, "data has 2 channels but the weight expects 3 in R.nn.conv2d"),
    ((1, 4, 5, 5), (4, 1, 3, 3), {"groups": 2}, "data has 4 channels but the weight expects 1 per group x 2 groups = 2"),
    ((1, 4, 5, 5), (6, 1, 3, 3), {"groups": 4}, "6 output channels are not divisible by 4 groups"),
    ((1, 2, 5), (4, 2, 3, 3), {}, "data must have rank 4, got rank 3"),
    ((1, 2, 2, 2), (4, 2, 3, 3), {}, "the output would be empty"),
    ((1, 2, 5, 5), (4, 2, 3, 3), {"padding": (1, 2, 3)}, "expected 1 or 2 or 4 values, got 3"),
    ((1, 2, 5, 5), (4, 2, 3, 3), {"strides": 0}, "values must be at least 1"),
    ((1, 2, 5, 5), (4, 2, 3, 3), {"data_layout": "NCHW4c"}, "expected a permutation of 'NCHW'"),
    ((1, 2, 5, 5), (4, 2, 3, 3), {"groups": 0}, "expected a positive int"),
])
def test_conv2d_errors(data, weight, attrs, message):
    with pytest.raises(DiagnosticError, match=message):
        infer("nn.conv2d", tensor(data), tensor(weight), **attrs)


def test_conv_errors_name_the_operator_and_dtypes():
    with pytest.raises(DiagnosticError, match="data type float32 and weight type float16 differ; give out_dtype "
                                              "in R.nn.conv2d"):
        infer("nn.conv2d", tensor((1, 2, 5, 5)), tensor((4, 2, 3, 3), "float16"))
    with pytest.raises(DiagnosticError, match="output_padding 2 must be smaller than the stride or the dilation"):
        infer("nn.conv2d_transpose", tensor((1, 2, 5, 5)), tensor((2, 3, 3, 3)), strides=2, output_padding=2)
    with pytest.raises(DiagnosticError, match="only NCHW data with IOHW kernels is supported"):
        infer("nn.conv2d_transpose", tensor((1, 5, 5, 2)), tensor((2, 3, 3, 3)), data_layout="NHWC")
