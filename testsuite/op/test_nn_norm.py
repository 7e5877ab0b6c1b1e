"""R.nn.batch_norm and R.nn.group_norm: inference, attribute checks, and legalized
kernels against numpy (float32, rtol 1e-4, atol 1e-5)."""

import numpy as np
import pytest

from numeric import run_op
from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")
RNG = np.random.default_rng(11)
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def normal(*shape):
    return RNG.standard_normal(shape).astype("float32")


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [d.value if isinstance(d, tir.IntImm) else d for d in info.shape_values]


def test_batch_norm_returns_output_and_moving_statistics():
    info = infer("nn.batch_norm", tensor((N, 3, 4, 5)), *[tensor((3,)) for _ in range(4)], axis=1)
    assert isinstance(info, ir.TupleStructInfo)
    assert [dims(f) for f in info.fields] == [[N, 3, 4, 5], [3], [3]]


@pytest.mark.parametrize("params, attrs, message", [
    ([(3,), (3,), (3,), (4,)], {"axis": 1}, "moving_var has \\(4,\\) elements but axis 1 of data \\(2, 3, 4\\) has 3"),
    ([(3, 1), (3,), (3,), (3,)], {"axis": 1}, "gamma must have rank 1, got rank 2"),
    ([(3,)] * 4, {"axis": 3}, "axis 3 is out of range for a tensor of rank 3"),
    ([(3,)] * 4, {}, "R.nn.batch_norm needs attribute 'axis'"),
])
def test_batch_norm_errors(params, attrs, message):
    with pytest.raises(DiagnosticError, match=message):
        infer("nn.batch_norm", tensor((2, 3, 4)), *[tensor(p) for p in params], **attrs)


def batch_norm_reference(x, gamma, beta, mean, var, axis, epsilon=1e-5, center=True, scale=True, momentum=0.1,
                         training=True):
    others = tuple(a for a in range(x.ndim) if a != axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    if training:
        batch_mean, batch_var = x.mean(axis=others), x.var(axis=others)
        new_mean = (1 - momentum) * mean + momentum * batch_mean
        new_var = (1 - momentum) * var + momentum * batch_var
    else:
        batch_mean, batch_var, new_mean, new_var = mean, var, mean, var
    out = (x - batch_mean.reshape(shape)) / np.sqrt(batch_var.reshape(shape) + epsilon)
    if scale:
        out = out * gamma.reshape(shape)
    if center:
        out = out + beta.reshape(shape)
    return out, new_mean, new_var


@pytest.mark.parametrize("shape, axis, attrs", [
    ((2, 3, 4, 5), 1, {}),
    ((2, 3, 4, 5), 1, {"training": False}),
    ((2, 3, 4, 5), 1, {"training": False, "center": False, "epsilon": 1e-3}),
    ((2, 3, 4, 5), 1, {"scale": False, "momentum": 0.3}),
    ((2, 4, 3), -1, {}),
])
def test_batch_norm(shape, axis, attrs):
    x = normal(*shape)
    channels = shape[axis]
    gamma, beta, mean = normal(channels), normal(channels), normal(channels)
    var = np.abs(normal(channels)) + 0.5
    got = run_op("nn.batch_norm", x, gamma, beta, mean, var, axis=axis, **attrs)
    expected = batch_norm_reference(x, gamma, beta, mean, var, axis % len(shape), **attrs)
    for value, reference in zip(got, expected):
        np.testing.assert_allclose(value, reference, **TOLERANCE)


def test_group_norm_shapes_and_errors():
    params = (tensor((6,)), tensor((6,)))
    info = infer("nn.group_norm", tensor((N, 6, 3, 2)), *params, num_groups=3, channel_axis=1, axes=[2, 3])
    assert dims(info) == [N, 6, 3, 2]
    with pytest.raises(DiagnosticError, match="6 channels do not split into 4 groups in R.nn.group_norm"):
        infer("nn.group_norm", tensor((2, 6, 3, 2)), *params, num_groups=4, channel_axis=1, axes=[2, 3])
    with pytest.raises(DiagnosticError, match="must not include the channel axis 1"):
        infer("nn.group_norm", tensor((2, 6, 3, 2)), *params, num_groups=3, channel_axis=1, axes=[1, 2])
    with pytest.raises(DiagnosticError, match="beta has \\(5,\\) elements"):
        infer("nn.group_norm", tensor((2, 6, 3, 2)), tensor((6,)), tensor((5,)), num_groups=3, channel_axis=1,
              axes=[2, 3])


def group_norm_reference(x, gamma, beta, num_groups, channel_axis, axes, epsilon=1e-5, center=True, scale=True):
    """Moves the channel axis last, splits it into groups, normalizes each group."""
    moved = np.moveaxis(x, channel_axis, -1)
    moved_axes = [a if a < channel_axis else a - 1 for a in axes]
    grouped = moved.reshape(moved.shape[:-1] + (num_groups, -1))
    reduce = tuple(moved_axes) + (grouped.ndim - 1,)
    mean = grouped.mean(axis=reduce, keepdims=True)
    var = grouped.var(axis=reduce, keepdims=True)
    out = ((grouped - mean) / np.sqrt(var + epsilon)).reshape(moved.shape)
    if scale:
        out = out * gamma
    if center:
        out = out + beta
    return np.moveaxis(out, -1, channel_axis)


@pytest.mark.parametrize("shape, attrs", [
    ((2, 6, 3, 2), {"num_groups": 3, "channel_axis": 1, "axes": [2, 3]}),
    ((2, 6, 3, 2), {"num_groups": 2, "channel_axis": 1, "axes": [2, 3], "epsilon": 1e-3, "center": False}),
    ((2, 6, 3, 2), {"num_groups": 1, "channel_axis": 1, "axes": [2, 3], "scale": False}),
    ((2, 3, 2, 6), {"num_groups": 3, "channel_axis": -1, "axes": [1, 2]}),
    ((2, 3, 2, 6), {"num_groups": 3, "channel_axis": 3, "axes": [1]}),
])
def test_group_norm(shape, attrs):
    x = normal(*shape)
    channels = shape[attrs["channel_axis"]]
    gamma, beta = normal(channels), normal(channels)
    got = run_op("nn.group_norm", x, gamma, beta, **{**attrs, "axes": tuple(attrs["axes"])})
    reference_attrs = {**attrs, "channel_axis": attrs["channel_axis"] % len(shape)}
    np.testing.assert_allclose(got, group_norm_reference(x, gamma, beta, **reference_attrs), **TOLERANCE)
