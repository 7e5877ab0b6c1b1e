"""numpy implementations of the Relax operators that have no one-line numpy spelling.

A function converted with `as_pyfunc(..., backend="numpy")` imports this module as `nn`
when it calls one of these (convolution, pooling, normalization, erf, strided slices).
Each follows the operator's Relax semantics (TVM 0.27), for the NCHW/OIHW layouts the
numpy table accepts; results keep the input's dtype.
"""

from __future__ import annotations

import math

import numpy as np

_ERF = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    return np.asarray(_ERF(x)).astype(x.dtype)


def gelu(x):
    return (x * (0.5 + 0.5 * erf(x * x.dtype.type(1 / math.sqrt(2))))).astype(x.dtype)


def gelu_tanh(x):
    inner = x.dtype.type(math.sqrt(2 / math.pi)) * (x + x.dtype.type(0.044715) * x * x * x)
    return (x.dtype.type(0.5) * x * (1 + np.tanh(inner))).astype(x.dtype)


def sigmoid(x):
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


def softmax(x, axis):
    shifted = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return (shifted / np.sum(shifted, axis=axis, keepdims=True)).astype(x.dtype)


def log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return (shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))).astype(x.dtype)


def layer_norm(x, gamma, beta, axes, epsilon, center=True, scale=True):
    axes = tuple(axes)
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean(np.square(x - mean), axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(var + x.dtype.type(epsilon))
    if scale:
        out = out * gamma
    if center:
        out = out + beta
    return out.astype(x.dtype)


def round_half_away(x):
    """TVM's round (llvm.round): halves away from zero, unlike numpy's half-to-even."""
    return (np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5))).astype(x.dtype)


def strided_slice(x, axes, begin, end, strides=None):
    index = [slice(None)] * x.ndim
    for position, axis in enumerate(axes):
        step = strides[position] if strides else 1
        index[axis] = slice(begin[position], end[position], step)
    return np.ascontiguousarray(x[tuple(index)])


def _padded(x, padding, ceil_extra, value):
    top, left, bottom, right = padding
    widths = ((0, 0), (0, 0), (top, bottom + ceil_extra[0]), (left, right + ceil_extra[1]))
    return np.pad(x, widths, constant_values=value)


def _windows(x, kernel, strides, dilation, out_hw):
    """Yields (kh, kw, view): the input elements under kernel position (kh, kw) for every
    output position, shape (N, C, OH, OW)."""
    for kh in range(kernel[0]):
        for kw in range(kernel[1]):
            h0, w0 = kh * dilation[0], kw * dilation[1]
            yield kh, kw, x[:, :, h0:h0 + strides[0] * out_hw[0]:strides[0], w0:w0 + strides[1] * out_hw[1]:strides[1]]


def _out_size(size, kernel, stride, dilation, pads, ceil_mode):
    span = size + pads - dilation * (kernel - 1) - 1
    return (-(-span // stride) if ceil_mode else span // stride) + 1


def conv2d(x, w, strides, padding, dilation, groups, out_dtype=None):
    """NCHW input, OIHW weight."""
    x = _padded(x, padding, (0, 0), 0)
    out_hw = [_out_size(x.shape[2 + i], w.shape[2 + i], strides[i], dilation[i], 0, False) for i in range(2)]
    n, out_channels = x.shape[0], w.shape[0]
    per_group_in, per_group_out = x.shape[1] // groups, out_channels // groups
    acc = np.zeros((n, out_channels, *out_hw), dtype=np.float64 if x.dtype.kind == "f" else np.int64)
    for group in range(groups):
        xs = x[:, group * per_group_in:(group + 1) * per_group_in]
        ws = w[group * per_group_out:(group + 1) * per_group_out]
        for kh, kw, view in _windows(xs, w.shape[2:], strides, dilation, out_hw):
            acc[:, group * per_group_out:(group + 1) * per_group_out] += np.einsum(
                "nchw,oc->nohw", view, ws[:, :, kh, kw], dtype=acc.dtype)
    return acc.astype(out_dtype or x.dtype)


def _pool(x, pool_size, strides, dilation, padding, ceil_mode, value):
    out_hw = [_out_size(x.shape[2 + i], pool_size[i], strides[i], dilation[i], padding[i] + padding[i + 2],
                        ceil_mode) for i in range(2)]
    extra = [max(0, (out_hw[i] - 1) * strides[i] + dilation[i] * (pool_size[i] - 1) + 1
                 - (x.shape[2 + i] + padding[i] + padding[i + 2])) for i in range(2)]
    return _padded(x, padding, extra, value), out_hw


def max_pool2d(x, pool_size, strides, dilation, padding, ceil_mode=False):
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    padded, out_hw = _pool(x, pool_size, strides, dilation, padding, ceil_mode, low)
    out = None
    for _, _, view in _windows(padded, pool_size, strides, dilation, out_hw):
        out = view.copy() if out is None else np.maximum(out, view)
    return out.astype(x.dtype)


def avg_pool2d(x, pool_size, strides, dilation, padding, ceil_mode=False, count_include_pad=False):
    padded, out_hw = _pool(x, pool_size, strides, dilation, padding, ceil_mode, 0)
    inside = _pool(np.ones((1, 1, *x.shape[2:]), dtype=np.float64), pool_size, strides, dilation, padding,
                   ceil_mode, 0)[0]
    if count_include_pad:
        top, left, bottom, right = padding
        inside[:, :, :top + x.shape[2] + bottom, :left + x.shape[3] + right] = 1
    total = np.zeros((x.shape[0], x.shape[1], *out_hw), dtype=np.float64)
    count = np.zeros((1, 1, *out_hw), dtype=np.float64)
    for _, _, view in _windows(padded, pool_size, strides, dilation, out_hw):
        total += view
    for _, _, view in _windows(inside, pool_size, strides, dilation, out_hw):
        count += view
    return (total / np.maximum(count, 1)).astype(x.dtype)
