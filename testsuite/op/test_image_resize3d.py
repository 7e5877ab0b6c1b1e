"""R.image.resize3d: inference and the legalized kernel against a separable numpy
reference built from test_image_resize's per-axis taps (float32, rtol 1e-5,
atol 1e-5). The kernels also agreed exactly with TVM 0.27's for linear, cubic and
nearest resizing; tf_crop_and_resize and cubic_exclude differ from TVM 0.27 on
purpose where its 3-D kernel misapplies them (see lib/relax/op/image_3d.py)."""

import numpy as np
import pytest

from numeric import run_op
from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of
from test_image_resize import axis_taps

RNG = np.random.default_rng(43)
X = RNG.standard_normal((1, 2, 3, 4, 3)).astype("float32")


def shape(*values):
    return ir.ShapeExpr(tuple(tir.IntImm("int64", v) for v in values))


def resize3d_reference(x, size, method, mode, rounding):
    """Each axis resized by a matrix whose rows hold the taps' weights; the three
    matrices applied together (resizing is separable)."""
    matrices = []
    for in_size, out_size in zip(x.shape[2:], size):
        matrix = np.zeros((out_size, in_size))
        for row, (indices, weights) in enumerate(axis_taps(method, mode, in_size, out_size, rounding, -0.75)):
            for index, weight in zip(indices, weights):
                matrix[row, index] += weight
        matrices.append(matrix)
    return np.einsum("ncdhw,Dd,Hh,Ww->ncDHW", x.astype("float64"), *matrices).astype(x.dtype)


@pytest.mark.parametrize("method, mode, rounding", [
    ("linear", "half_pixel", ""),
    ("cubic", "align_corners", ""),
    ("nearest_neighbor", "asymmetric", "floor"),  # "" means floor except with align_corners
])
def test_resize3d(method, mode, rounding):
    got = run_op("image.resize3d", X, shape(2, 3, 4), method=method, coordinate_transformation_mode=mode)
    np.testing.assert_allclose(got, resize3d_reference(X, (2, 3, 4), method, mode, rounding), rtol=1e-5, atol=1e-5)


def test_resize3d_channels_last():
    got = run_op("image.resize3d", X.transpose(0, 2, 3, 4, 1).copy(), shape(2, 5, 4), layout="NDHWC")
    expected = resize3d_reference(X, (2, 5, 4), "linear", "half_pixel", "")
    np.testing.assert_allclose(got, expected.transpose(0, 2, 3, 4, 1), rtol=1e-5, atol=1e-5)


def infer(*args, **attrs):
    return struct_info_of(ir.Call(ir.Op("relax.image.resize3d"), args, ir.FrozenDict(attrs)))


def tensor(dims):
    return ir.Var("x", ir.TensorStructInfo(shape(*dims), "float32"))


def test_resize3d_inference_and_errors():
    info = infer(tensor((1, 3, 4, 5, 2)), shape(6), layout="NDHWC")
    assert [d.value for d in info.shape_values] == [1, 6, 6, 6, 2]
    with pytest.raises(DiagnosticError, match="size must give 1 or 3 values .depth, height, width., got 2"):
        infer(tensor((1, 2, 3, 4, 5)), shape(6, 6))
    with pytest.raises(DiagnosticError, match="data must have rank 5, got rank 4 in R.image.resize3d"):
        infer(tensor((1, 2, 3, 4)), shape(6))
    with pytest.raises(DiagnosticError, match="expected one of 'NCDHW', 'NDHWC'"):
        infer(tensor((1, 2, 3, 4, 5)), shape(6), layout="NCHWD")
