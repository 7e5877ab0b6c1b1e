"""R.image.resize2d: inference, attribute checks, and the legalized kernel against a
numpy reference written from the formulas in lib/relax/op/image.py's docstring
(float32 coordinates as in TVM; rtol 1e-5, atol 1e-5)."""

import numpy as np
import pytest

from numeric import run_op
from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")
RNG = np.random.default_rng(17)
X = RNG.standard_normal((1, 2, 4, 5)).astype("float32")
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
F32 = np.float32


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def shape(*values):
    return ir.ShapeExpr(tuple(v if isinstance(v, tir.PrimExpr) else tir.IntImm("int64", v) for v in values))


def infer(*args, **attrs):
    return struct_info_of(ir.Call(ir.Op("relax.image.resize2d"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [d.value if isinstance(d, tir.IntImm) else d for d in info.shape_values]


def test_resize2d_shapes():
    assert dims(infer(tensor((N, 2, 4, 5)), shape(10, 12))) == [N, 2, 10, 12]
    assert dims(infer(tensor((1, 4, 5, 2)), shape(7, 3), layout="NHWC")) == [1, 7, 3, 2]
    assert dims(infer(tensor((1, 2, 4, 5)), shape(N, 3))) == [1, 2, N, 3]
    assert infer(tensor((1, 2, 4, 5)), shape(8, 8), out_dtype="float16").dtype == "float16"


@pytest.mark.parametrize("args, attrs, message", [
    (((1, 2, 4), (8, 8)), {}, "data must have rank 4, got rank 3 in R.image.resize2d"),
    (((1, 2, 4, 5), (8, 8, 8)), {}, "size must give 1 or 2 values"),
    (((1, 2, 4, 5), (8, 8)), {"method": "bilinear"}, "expected one of 'nearest_neighbor', 'linear', 'cubic'"),
    (((1, 2, 4, 5), (8, 8)), {"coordinate_transformation_mode": "center"}, "expected one of 'half_pixel'"),
    (((1, 2, 4, 5), (8, 8)), {"layout": "NCWH"}, "expected one of 'NCHW', 'NHWC'"),
])
def test_resize2d_errors(args, attrs, message):
    with pytest.raises(DiagnosticError, match=message):
        infer(tensor(args[0]), shape(*args[1]), **attrs)


def source_coordinates(mode, in_size, out_size):
    x, size, target = np.arange(out_size, dtype=F32), F32(in_size), F32(out_size)
    if mode == "half_pixel":
        return (x + F32(0.5)) * (size / target) - F32(0.5)
    if mode == "align_corners":
        return (size - F32(1)) / (target - F32(1)) * x
    return (size / target) * x  # asymmetric


def nearest(coordinates, rounding):
    if rounding == "round":
        return np.rint(coordinates)  # half to even
    if rounding == "floor":
        return np.floor(coordinates + F32(1e-5))
    return np.ceil(coordinates - F32(1e-5))


def cubic_weights(t, alpha):
    return [alpha * (t ** 3 - 2 * t ** 2 + t), (alpha + 2) * t ** 3 - (3 + alpha) * t ** 2 + 1,
            -(alpha + 2) * t ** 3 + (3 + 2 * alpha) * t ** 2 - alpha * t, -alpha * t ** 3 + alpha * t ** 2]


def interpolation_taps(method, coordinate, alpha):
    start, t = int(np.floor(coordinate)), coordinate - np.floor(coordinate)
    if method == "linear":
        return [start, start + 1], [1 - t, t]
    return [start - 1, start, start + 1, start + 2], cubic_weights(t, alpha)


def axis_taps(method, mode, in_size, out_size, rounding, alpha):
    """For each output position along one axis: the input indices it reads (clamped to
    the image) and their weights."""
    coordinates = source_coordinates(mode, in_size, out_size)
    if method == "nearest_neighbor":
        taps = [([int(i)], [1.0]) for i in nearest(coordinates, rounding)]
    else:
        taps = [interpolation_taps(method, c, alpha) for c in coordinates.astype("float64")]
    return [([min(max(i, 0), in_size - 1) for i in indices], weights) for indices, weights in taps]


def resize_reference(x, size, method="linear", mode="half_pixel", rounding="round", alpha=-0.75):
    rows = axis_taps(method, mode, x.shape[2], size[0], rounding, alpha)
    cols = axis_taps(method, mode, x.shape[3], size[1], rounding, alpha)
    out = np.zeros(x.shape[:2] + tuple(size), "float64")
    for i, (row_indices, row_weights) in enumerate(rows):
        for j, (col_indices, col_weights) in enumerate(cols):
            for r, wr in zip(row_indices, row_weights):
                for c, wc in zip(col_indices, col_weights):
                    out[:, :, i, j] += wr * wc * x[:, :, r, c]
    return out.astype(x.dtype)


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("size", [(7, 3), (8, 10)])
def test_resize2d(method, mode, size):
    got = run_op("image.resize2d", X, shape(*size), method=method, coordinate_transformation_mode=mode)
    np.testing.assert_allclose(got, resize_reference(X, size, method, mode), **TOLERANCE)


@pytest.mark.parametrize("rounding, mode, expected_rounding", [
    ("floor", "asymmetric", "floor"), ("ceil", "half_pixel", "ceil"),
    ("", "asymmetric", "floor"), ("", "align_corners", "round"),
])
def test_nearest_rounding_methods(rounding, mode, expected_rounding):
    got = run_op("image.resize2d", X, shape(8, 10), method="nearest_neighbor", coordinate_transformation_mode=mode,
                 rounding_method=rounding)
    expected = resize_reference(X, (8, 10), "nearest_neighbor", mode, expected_rounding)
    np.testing.assert_array_equal(got, expected)


def test_resize2d_nhwc():
    got = run_op("image.resize2d", X.transpose(0, 2, 3, 1).copy(), shape(7, 9), layout="NHWC")
    np.testing.assert_allclose(got, resize_reference(X, (7, 9)).transpose(0, 2, 3, 1), **TOLERANCE)


def test_nearest_keeps_integer_values():
    x = np.arange(20, dtype="int32").reshape(1, 1, 4, 5)
    got = run_op("image.resize2d", x, shape(8, 10), method="nearest_neighbor",
                 coordinate_transformation_mode="asymmetric", rounding_method="floor")
    np.testing.assert_array_equal(got, np.repeat(np.repeat(x, 2, axis=2), 2, axis=3))
