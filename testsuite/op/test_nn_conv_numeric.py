"""Legalized convolutions against numpy references (float32, rtol 1e-5, atol 1e-5).

The references are written independently of the kernels: a convolution as a sum of
shifted, strided slices of the padded input; a transposed convolution by scattering
each input element's weighted kernel into the output.
"""

import numpy as np
import pytest

from numeric import run_op

RNG = np.random.default_rng(5)
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def normal(*shape):
    return RNG.standard_normal(shape).astype("float32")


def conv_reference(x, w, strides, padding, dilation, groups):
    """N-d convolution, NC... data and OI... weight; padding is (before..., after...)."""
    rank = x.ndim - 2
    pads = [(0, 0), (0, 0)] + [(padding[a], padding[rank + a]) for a in range(rank)]
    xp = np.pad(x, pads)
    out_channels, group_in = w.shape[:2]
    kernel = w.shape[2:]
    out_spatial = [(xp.shape[2 + a] - dilation[a] * (kernel[a] - 1) - 1) // strides[a] + 1 for a in range(rank)]
    out = np.zeros((x.shape[0], out_channels, *out_spatial), "float64")
    group_out = out_channels // groups
    for offset in np.ndindex(*kernel):
        window = tuple(slice(offset[a] * dilation[a], offset[a] * dilation[a] + strides[a] * out_spatial[a], strides[a])
                       for a in range(rank))
        for g in range(groups):
            patch = xp[(slice(None), slice(g * group_in, (g + 1) * group_in)) + window]
            weights = w[(slice(g * group_out, (g + 1) * group_out), slice(None)) + offset]
            out[:, g * group_out:(g + 1) * group_out] += np.einsum("nc...,oc->no...", patch, weights)
    return out.astype(x.dtype)


def conv_transpose_reference(x, w, strides, padding, output_padding, dilation, groups):
    """2-D transposed convolution, NCHW data and IOHW weight."""
    batch, in_channels, height, width = x.shape
    _, group_out, kh, kw = w.shape
    group_in = in_channels // groups
    full_h = (height - 1) * strides[0] + dilation[0] * (kh - 1) + 1 + output_padding[0]
    full_w = (width - 1) * strides[1] + dilation[1] * (kw - 1) + 1 + output_padding[1]
    full = np.zeros((batch, group_out * groups, full_h, full_w), "float64")
    for n, c, i, j in np.ndindex(batch, in_channels, height, width):
        g = c // group_in
        for ky, kx in np.ndindex(kh, kw):
            y, z = i * strides[0] + ky * dilation[0], j * strides[1] + kx * dilation[1]
            full[n, g * group_out:(g + 1) * group_out, y, z] += x[n, c, i, j] * w[c, :, ky, kx]
    out_h = full_h - padding[0] - padding[2]
    out_w = full_w - padding[1] - padding[3]
    return full[:, :, padding[0]:padding[0] + out_h, padding[1]:padding[1] + out_w].astype(x.dtype)


@pytest.mark.parametrize("weight_shape, attrs, normal_form", [
    ((4, 2, 3, 3), {}, ((1, 1), (0, 0, 0, 0), (1, 1), 1)),
    ((4, 2, 3, 3), {"strides": (2, 1), "padding": (1, 0, 2, 1), "dilation": (1, 2)},
     ((2, 1), (1, 0, 2, 1), (1, 2), 1)),
    ((4, 2, 3, 2), {"padding": (1, 2)}, ((1, 1), (1, 2, 1, 2), (1, 1), 1)),
    ((4, 2, 2, 2), {"strides": 2, "padding": 1}, ((2, 2), (1, 1, 1, 1), (1, 1), 1)),
])
def test_conv2d(weight_shape, attrs, normal_form):
    x, w = normal(1, 2, 5, 5), normal(*weight_shape)
    np.testing.assert_allclose(run_op("nn.conv2d", x, w, **attrs), conv_reference(x, w, *normal_form), **TOLERANCE)


def test_grouped_and_depthwise_conv2d():
    x = normal(1, 4, 5, 5)
    grouped = normal(6, 2, 3, 3)
    np.testing.assert_allclose(run_op("nn.conv2d", x, grouped, groups=2, padding=1),
                               conv_reference(x, grouped, (1, 1), (1, 1, 1, 1), (1, 1), 2), **TOLERANCE)
    depthwise = normal(4, 1, 3, 3)
    np.testing.assert_allclose(run_op("nn.conv2d", x, depthwise, groups=4, strides=2),
                               conv_reference(x, depthwise, (2, 2), (0, 0, 0, 0), (1, 1), 4), **TOLERANCE)


def test_conv2d_nhwc_hwio():
    x, w = normal(1, 2, 5, 5), normal(4, 2, 3, 3)
    got = run_op("nn.conv2d", x.transpose(0, 2, 3, 1).copy(), w.transpose(2, 3, 1, 0).copy(), padding=1, strides=2,
                 data_layout="NHWC", kernel_layout="HWIO")
    expected = conv_reference(x, w, (2, 2), (1, 1, 1, 1), (1, 1), 1).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, expected, **TOLERANCE)


def test_conv2d_int8_accumulates_in_out_dtype():
    x = RNG.integers(-100, 100, (1, 2, 4, 4)).astype("int8")
    w = RNG.integers(-100, 100, (3, 2, 3, 3)).astype("int8")
    expected = conv_reference(x.astype("int64"), w.astype("int64"), (1, 1), (0, 0, 0, 0), (1, 1), 1).astype("int32")
    got = run_op("nn.conv2d", x, w, out_dtype="int32")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("attrs, normal_form", [
    ({}, ((1,), (0, 0), (1,), 1)),
    ({"strides": 2, "padding": 1}, ((2,), (1, 1), (1,), 1)),
    ({"padding": (2, 0), "dilation": 2, "groups": 2}, ((1,), (2, 0), (2,), 2)),
])
def test_conv1d(attrs, normal_form):
    x, w = normal(1, 4, 7), normal(4, 4 // normal_form[3], 3)
    np.testing.assert_allclose(run_op("nn.conv1d", x, w, **attrs), conv_reference(x, w, *normal_form), **TOLERANCE)


@pytest.mark.parametrize("shapes, attrs, normal_form", [
    (((1, 2, 3, 3), (2, 3, 3, 3)), {}, ((1, 1), (0, 0, 0, 0), (0, 0), (1, 1), 1)),
    (((1, 2, 3, 3), (2, 3, 3, 3)), {"strides": 2, "padding": 1, "output_padding": 1},
     ((2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 1)),
    (((1, 2, 3, 3), (2, 3, 3, 2)), {"strides": (2, 1), "padding": (1, 0, 0, 1), "dilation": (1, 2)},
     ((2, 1), (1, 0, 0, 1), (0, 0), (1, 2), 1)),
    (((1, 4, 3, 3), (4, 2, 3, 3)), {"strides": 2, "groups": 2}, ((2, 2), (0, 0, 0, 0), (0, 0), (1, 1), 2)),
])
def test_conv2d_transpose(shapes, attrs, normal_form):
    x, w = normal(*shapes[0]), normal(*shapes[1])
    np.testing.assert_allclose(run_op("nn.conv2d_transpose", x, w, **attrs),
                               conv_transpose_reference(x, w, *normal_form), **TOLERANCE)
