"""numpy meanings of the structured operators the generator emits, written from their
definitions (TVM's, which match PyTorch's), not from our legalization.

Windows are NCHW. `padding` is TVM's (top, left, bottom, right); with ceil_mode a
last window that would start in the bottom or right padding is dropped.
"""

from __future__ import annotations

import math

import numpy as np


def window_count(size: int, before: int, after: int, kernel: int, stride: int, dilation: int,
                 ceil_mode: bool = False) -> int:
    """How many windows fit along one axis (0: none)."""
    span = size + before + after - dilation * (kernel - 1) - 1
    if span < 0:
        return 0
    count = (math.ceil(span / stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (count - 1) * stride >= size + before:
        count -= 1
    return count


def window_positions(index: int, stride: int, before: int, kernel: int, dilation: int) -> list[int]:
    start = index * stride - before
    return [start + k * dilation for k in range(kernel)]


def conv2d(data, weight, strides, padding, dilation, groups):
    """NCHW data, OIHW weight; output channel o reads input group o // (O / groups)."""
    batch, channels, height, width = data.shape
    out_channels, group_channels, kernel_h, kernel_w = weight.shape
    padded = np.pad(data, ((0, 0), (0, 0), (padding[0], padding[2]), (padding[1], padding[3])))
    out_h = window_count(height, padding[0], padding[2], kernel_h, strides[0], dilation[0])
    out_w = window_count(width, padding[1], padding[3], kernel_w, strides[1], dilation[1])
    out = np.zeros((batch, out_channels, out_h, out_w), dtype=np.result_type(data, weight))
    per_group = out_channels // groups
    for o in range(out_channels):
        first = (o // per_group) * group_channels
        for kh in range(kernel_h):
            for kw in range(kernel_w):
                rows = slice(kh * dilation[0], kh * dilation[0] + (out_h - 1) * strides[0] + 1, strides[0])
                cols = slice(kw * dilation[1], kw * dilation[1] + (out_w - 1) * strides[1] + 1, strides[1])
                patch = padded[:, first:first + group_channels, rows, cols]
                out[:, o] += np.einsum("nchw,c->nhw", patch, weight[o, :, kh, kw])
    return out


def pool2d(data, kind: str, pool_size, strides, dilation, padding, ceil_mode: bool, count_include_pad: bool):
    """Max or average pooling; padding never wins a max and counts for an average only
    with count_include_pad (and then only the padding that was asked for)."""
    batch, channels, height, width = data.shape
    counts = [window_count(size, padding[axis], padding[2 + axis], pool_size[axis], strides[axis],
                           dilation[axis], ceil_mode) for axis, size in enumerate((height, width))]
    out = np.zeros((batch, channels, *counts), dtype=data.dtype)
    for i in range(counts[0]):
        rows = window_positions(i, strides[0], padding[0], pool_size[0], dilation[0])
        for j in range(counts[1]):
            cols = window_positions(j, strides[1], padding[1], pool_size[1], dilation[1])
            inside_rows = [r for r in rows if 0 <= r < height]
            inside_cols = [c for c in cols if 0 <= c < width]
            window = data[:, :, inside_rows][:, :, :, inside_cols]
            if kind == "max":
                out[:, :, i, j] = window.max(axis=(2, 3))
                continue
            if count_include_pad:
                padded_rows = [r for r in rows if -padding[0] <= r < height + padding[2]]
                padded_cols = [c for c in cols if -padding[1] <= c < width + padding[3]]
                divisor = len(padded_rows) * len(padded_cols)
            else:
                divisor = len(inside_rows) * len(inside_cols)
            out[:, :, i, j] = window.sum(axis=(2, 3)) / divisor
    return out


def every_window_reads_input(size: int, before: int, after: int, kernel: int, stride: int, dilation: int,
                             ceil_mode: bool) -> bool:
    """Whether each window along an axis holds at least one input element (else a max
    pool would read only padding)."""
    count = window_count(size, before, after, kernel, stride, dilation, ceil_mode)
    return count > 0 and all(
        any(0 <= p < size for p in window_positions(i, stride, before, kernel, dilation)) for i in range(count)
    )


def softmax(x, axis: int):
    shifted = np.exp(x - x.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def log_softmax(x, axis: int):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def layer_norm(x, gamma, beta, axes, epsilon: float):
    mean = x.mean(axis=tuple(axes), keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=tuple(axes), keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def matmul(a, b):
    return np.matmul(a, b)
