"""numpy references for N-d transposed convolutions and pools (any number of spatial
axes), written independently of the legalized kernels they check: a transposed
convolution as the scatter it is, a pool window by window. (The N-d convolution
reference is test_nn_conv_numeric.conv_reference.)"""

from __future__ import annotations

import itertools

import numpy as np

from test_nn_pool_numeric import out_size


def conv_transpose(x, w, strides, padding, output_padding, dilation, groups=1):
    """NC<spatial> data, IO<spatial> weight: each input position scatters its
    weighted kernel onto the output, which is then cropped by the padding."""
    rank = x.ndim - 2
    kernel = w.shape[2:]
    full = [(x.shape[2 + a] - 1) * strides[a] + dilation[a] * (kernel[a] - 1) + 1 + output_padding[a]
            for a in range(rank)]
    in_group, out_group = x.shape[1] // groups, w.shape[1]
    out = np.zeros((x.shape[0], out_group * groups, *full), np.float64)
    for offset in np.ndindex(*kernel):
        window = tuple(slice(offset[a] * dilation[a], offset[a] * dilation[a] + (x.shape[2 + a] - 1) * strides[a] + 1,
                             strides[a]) for a in range(rank))
        for g in range(groups):
            taps = w[(slice(g * in_group, (g + 1) * in_group), slice(None), *offset)]
            out[(slice(None), slice(g * out_group, (g + 1) * out_group), *window)] += np.einsum(
                "nc...,co->no...", x[:, g * in_group:(g + 1) * in_group], taps)
    crop = tuple(slice(padding[a], full[a] - padding[rank + a]) for a in range(rank))
    return out[(slice(None), slice(None), *crop)].astype(x.dtype)


def pool(x, kind, pool_size, strides, dilation, padding, ceil_mode=False, count_include_pad=False):
    """NC<spatial> pool; the padding never wins a max and the average divides by the
    window positions inside the input (inside the padded input with count_include_pad)."""
    rank = x.ndim - 2
    sizes = x.shape[2:]
    out_spatial = [out_size(sizes[a], pool_size[a], strides[a], dilation[a], padding[a], padding[rank + a],
                                  ceil_mode) for a in range(rank)]
    out = np.zeros(x.shape[:2] + tuple(out_spatial), x.dtype)
    for position in np.ndindex(*out_spatial):
        taps = [[position[a] * strides[a] - padding[a] + k * dilation[a] for k in range(pool_size[a])]
                for a in range(rank)]
        inside = [[t for t in axis if 0 <= t < sizes[a]] for a, axis in enumerate(taps)]
        window = x[np.ix_(range(x.shape[0]), range(x.shape[1]), *inside)]
        axes = tuple(range(2, 2 + rank))
        if kind == "max":
            out[(slice(None), slice(None), *position)] = window.max(axis=axes) if window.size else np.finfo(x.dtype).min
            continue
        if count_include_pad:
            count = np.prod([sum(-padding[a] <= t < sizes[a] + padding[rank + a] for t in axis)
                             for a, axis in enumerate(taps)])
        else:
            count = np.prod([len(axis) for axis in inside])
        out[(slice(None), slice(None), *position)] = window.sum(axis=axes) / max(count, 1)
    return out


def adaptive_avg_pool(x, output_size):
    """Bin i of an axis averages input [floor(i * in / out), ceil((i + 1) * in / out))."""
    sizes = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(output_size), x.dtype)
    for position in itertools.product(*(range(n) for n in output_size)):
        bins = tuple(slice(i * size // bins, -(-(i + 1) * size // bins))
                     for i, size, bins in zip(position, sizes, output_size))
        out[(slice(None), slice(None), *position)] = x[(slice(None), slice(None), *bins)].mean(
            axis=tuple(range(2, x.ndim)))
    return out
