"""Legalized pools against numpy references (float32, rtol 1e-5, atol 1e-6).

The reference walks the output positions of an NCHW pool window by window, with the
rules TVM's topi follows: padding never wins a max (it reads as the lowest finite
value), the average divides by the window positions inside the input (or inside the
padded input with count_include_pad), and ceil_mode drops a last window that would
start in the padding.
"""

import numpy as np
import pytest

from numeric import run_op

RNG = np.random.default_rng(7)
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
X = RNG.standard_normal((1, 2, 7, 6)).astype("float32")


def out_size(size, kernel, stride, dilation, before, after, ceil_mode):
    span = size + before + after - dilation * (kernel - 1) - 1
    count = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (count - 1) * stride >= size + before:
        count -= 1
    return count


def pool_reference(x, kind, pool_size, strides, dilation, padding, ceil_mode=False, count_include_pad=False):
    _, _, height, width = x.shape
    out_h = out_size(height, pool_size[0], strides[0], dilation[0], padding[0], padding[2], ceil_mode)
    out_w = out_size(width, pool_size[1], strides[1], dilation[1], padding[1], padding[3], ceil_mode)
    out = np.zeros(x.shape[:2] + (out_h, out_w), x.dtype)
    for i, j in np.ndindex(out_h, out_w):
        rows = [i * strides[0] - padding[0] + k * dilation[0] for k in range(pool_size[0])]
        cols = [j * strides[1] - padding[1] + k * dilation[1] for k in range(pool_size[1])]
        inside_rows = [r for r in rows if 0 <= r < height]
        inside_cols = [c for c in cols if 0 <= c < width]
        window = x[:, :, inside_rows][:, :, :, inside_cols]
        if kind == "max":
            lowest = np.finfo(x.dtype).min
            out[:, :, i, j] = window.max(axis=(2, 3)) if window.size else lowest
            continue
        if count_include_pad:
            count = (sum(-padding[0] <= r < height + padding[2] for r in rows)
                     * sum(-padding[1] <= c < width + padding[3] for c in cols))
        else:
            count = len(inside_rows) * len(inside_cols)
        out[:, :, i, j] = window.sum(axis=(2, 3)) / max(count, 1)
    return out


CASES = [
    {"pool_size": (2, 2), "strides": (2, 2)},
    {"pool_size": (2, 2), "strides": (2, 2), "ceil_mode": True},
    {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1), "ceil_mode": True},
    {"pool_size": (3, 2), "strides": (2, 3), "padding": (1, 0, 2, 1), "ceil_mode": True},
    {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1), "dilation": (2, 2)},
    {"pool_size": (2, 3), "strides": (1, 2), "padding": (2, 1, 0, 2), "dilation": (1, 2), "ceil_mode": True},
]


def _reference(kind, attrs, count_include_pad=False):
    return pool_reference(X, kind, attrs["pool_size"], attrs["strides"], attrs.get("dilation", (1, 1)),
                          attrs.get("padding", (0, 0, 0, 0)), attrs.get("ceil_mode", False), count_include_pad)


@pytest.mark.parametrize("attrs", CASES)
def test_max_pool2d(attrs):
    np.testing.assert_allclose(run_op("nn.max_pool2d", X, **attrs), _reference("max", attrs), **TOLERANCE)


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("attrs", CASES)
def test_avg_pool2d(attrs, count_include_pad):
    got = run_op("nn.avg_pool2d", X, count_include_pad=count_include_pad, **attrs)
    np.testing.assert_allclose(got, _reference("avg", attrs, count_include_pad), **TOLERANCE)


def test_pools_nhwc():
    attrs = {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1)}
    nhwc = X.transpose(0, 2, 3, 1).copy()
    for kind in ("max", "avg"):
        got = run_op(f"nn.{kind}_pool2d", nhwc, layout="NHWC", **attrs)
        np.testing.assert_allclose(got, _reference(kind, attrs).transpose(0, 2, 3, 1), **TOLERANCE)


def adaptive_reference(x, out_h, out_w):
    _, _, height, width = x.shape
    out = np.zeros(x.shape[:2] + (out_h, out_w), x.dtype)
    for i, j in np.ndindex(out_h, out_w):
        rows = slice(i * height // out_h, -(-(i + 1) * height // out_h))
        cols = slice(j * width // out_w, -(-(j + 1) * width // out_w))
        out[:, :, i, j] = x[:, :, rows, cols].mean(axis=(2, 3))
    return out


@pytest.mark.parametrize("output_size, expected_size", [((3, 4), (3, 4)), ((2,), (2, 2)), (1, (1, 1)), (None, (7, 6)),
                                                        ((4, 5), (4, 5))])
def test_adaptive_avg_pool2d(output_size, expected_size):
    got = run_op("nn.adaptive_avg_pool2d", X, output_size=output_size)
    np.testing.assert_allclose(got, adaptive_reference(X, *expected_size), **TOLERANCE)


def test_adaptive_avg_pool2d_nhwc():
    got = run_op("nn.adaptive_avg_pool2d", X.transpose(0, 2, 3, 1).copy(), output_size=(4, 5), layout="NHWC")
    np.testing.assert_allclose(got, adaptive_reference(X, 4, 5).transpose(0, 2, 3, 1), **TOLERANCE)
