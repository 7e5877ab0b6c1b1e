"""Generator rules for operators that reduce or combine many elements: reductions,
matmul, conv2d, pooling, softmax and layer_norm.

Their error bounds charge worst-case summation: n terms of magnitude B carry their
own errors n times and round at most n times over a sum of at most n B.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from hypothesis import strategies as st

import gen_common as common
import numpy_reference as ref
from error_bounds import (MATH_ULPS, MAX_MAGNITUDE, UNIT_ROUNDOFF, Bound, computed, product_error, product_range,
                          rounding)
from gen_common import FLOAT_DTYPES, MAX_ELEMENTS, NUMERIC_DTYPES, list_text

# Multiply-adds one kernel may do, so that -O0's scalar loops stay fast.
MAX_WORK = 1 << 18


def _float(value) -> bool:
    return value.kind == "float"


def _numeric(value) -> bool:
    return value.kind != "bool"


def summed(dtype: str, term: Bound, count: int, term_error: float) -> Bound:
    """A sum of `count` terms in `term`, each off by `term_error`."""
    return computed(dtype, count * term.lo, count * term.hi, count * term_error, count + 1)


# -- reductions ------------------------------------------------------------------------
@dataclass(frozen=True)
class Reduction:
    call: str
    numpy: Callable
    bound: Callable[[Bound, int, str], Bound]
    kinds: tuple[str, ...]
    single_axis: bool = False  # argmax/argmin: one axis or None
    exact_only: bool = False
    squares: bool = False  # variance, std: the operand's square must fit the dtype too


def _sum_bound(x: Bound, count: int, dtype: str) -> Bound:
    return summed(dtype, x, count, x.err)


def _mean_bound(x: Bound, count: int, dtype: str) -> Bound:
    return computed(dtype, x.lo, x.hi, x.err, count + 2)


def _index_bound(x: Bound, count: int, dtype: str) -> Bound:
    return Bound(0, count - 1)


def variance_error(x: Bound, count: int, dtype: str) -> float:
    """How far a variance over `count` elements may be off, computed in one pass
    (E[x^2] - E[x]^2, as TVM does) or two."""
    unit = UNIT_ROUNDOFF[dtype]
    return 4 * x.magnitude * x.err + 2 * x.err**2 + 4 * (count + 2) * unit * x.magnitude**2


def _variance_bound(x: Bound, count: int, dtype: str) -> Bound:
    return computed(dtype, 0.0, (x.hi - x.lo) ** 2 / 4, variance_error(x, count, dtype))


def _std_bound(x: Bound, count: int, dtype: str) -> Bound:
    # The variance may be near 0, where sqrt is steep: |sqrt(a) - sqrt(b)| <= sqrt(|a - b|).
    return computed(dtype, 0.0, (x.hi - x.lo) / 2, math.sqrt(variance_error(x, count, dtype)), MATH_ULPS)


REDUCTIONS = (
    Reduction("R.sum", np.sum, _sum_bound, ("float", "int")),
    Reduction("R.mean", np.mean, _mean_bound, ("float",)),
    Reduction("R.max", np.max, lambda x, n, d: x, ("float", "int")),
    Reduction("R.min", np.min, lambda x, n, d: x, ("float", "int")),
    Reduction("R.variance", np.var, _variance_bound, ("float",), squares=True),
    Reduction("R.std", np.std, _std_bound, ("float",), squares=True),
    Reduction("R.argmax", np.argmax, _index_bound, ("float", "int"), single_axis=True, exact_only=True),
    Reduction("R.argmin", np.argmin, _index_bound, ("float", "int"), single_axis=True, exact_only=True),
)


def _draw_axes(builder, rank: int, single: bool) -> tuple[int, ...] | None:
    """Reduced axes (spelled negative or not), or None for all of them."""
    if rank == 0 or builder.draw(st.integers(0, 3)) == 3:
        return None
    if single:
        chosen = [builder.draw(st.integers(0, rank - 1))]
    else:
        chosen = [axis for axis in range(rank) if builder.draw(st.booleans())] or [rank - 1]
    return tuple(axis - rank if builder.draw(st.booleans()) else axis for axis in chosen)


def _axis_text(axes, single: bool) -> str:
    if axes is None:
        return "None"
    return str(axes[0]) if single else list_text(axes)


def reduction(builder) -> None:
    """sum, mean, max, min over some axes or all, keepdims either way; argmax/argmin of exact values."""
    x = builder.operand(_numeric, builder.shape, NUMERIC_DTYPES)
    op = builder.draw(st.sampled_from([r for r in REDUCTIONS
                                       if x.kind in r.kinds and (x.bound.exact or not r.exact_only)]))
    axes = _draw_axes(builder, x.rank, op.single_axis)
    keepdims = builder.draw(st.booleans())
    reduced = range(x.rank) if axes is None else [a % x.rank for a in axes]
    count = math.prod(x.shape[a] for a in reduced)
    largest = MAX_MAGNITUDE[x.dtype] / count
    x = common.limit(builder, x, math.sqrt(largest) if op.squares else largest)
    shape = tuple(1 if a in reduced else d for a, d in enumerate(x.shape) if keepdims or a not in reduced)
    dtype = "int64" if op.single_axis else x.dtype
    numpy_axis = None if axes is None else (axes[0] if op.single_axis else axes)
    call = f"{op.call}({x.name}, axis={_axis_text(axes, op.single_axis)}, keepdims={keepdims})"
    builder.emit(call, shape, dtype, op.bound(x.bound, count, x.dtype), (x,),
                 lambda a: op.numpy(a, axis=numpy_axis, keepdims=keepdims))


# -- matmul ----------------------------------------------------------------------------
def _matmul_shape(a_shape, b_shape) -> tuple[int, ...] | None:
    """np.matmul's result shape, or None when the shapes do not multiply."""
    try:
        return np.matmul(np.empty(a_shape, np.int8), np.empty(b_shape, np.int8)).shape
    except ValueError:
        return None


def _fits_matmul(a, b_shape) -> bool:
    shape = _matmul_shape(a.shape, b_shape)
    if shape is None:
        return False
    return math.prod(shape) <= MAX_ELEMENTS and math.prod(shape) * a.shape[-1] <= MAX_WORK


def _matmul_rhs_shape(builder, a) -> tuple[int, ...]:
    """A right operand for `a`: (k,), (k, n), or batched (batch..., k, n) broadcasting with a's batch."""
    k = a.shape[-1]
    form = builder.draw(st.sampled_from(("matrix", "batched", "vector")))
    if form == "vector":
        return (k,)
    n = builder.dim(limit=max(1, MAX_WORK // max(1, a.size)))
    if form == "matrix" or a.rank <= 2:
        return (k, n)
    batch = tuple(d if builder.draw(st.booleans()) else 1 for d in a.shape[:-2])
    return (*batch, k, n)


def matmul(builder) -> None:
    """`R.matmul`: vector or matrix times vector, matrix or batched matrices."""
    a = builder.operand(lambda v: _numeric(v) and 1 <= v.rank and v.size * v.shape[-1] <= MAX_WORK,
                        lambda: builder.shape(min_rank=1, max_rank=3, max_elements=1024), NUMERIC_DTYPES)
    rhs_shape = _matmul_rhs_shape(builder, a)
    if not _fits_matmul(a, rhs_shape):
        rhs_shape = (a.shape[-1],)
    b = builder.operand(lambda v: v.dtype == a.dtype and v.rank >= 1 and _fits_matmul(a, v.shape),
                        lambda: rhs_shape, (a.dtype,))
    k = a.shape[-1]
    root = math.sqrt(MAX_MAGNITUDE[a.dtype] / k)
    a, b = common.limit(builder, a, root), common.limit(builder, b, root)
    term = Bound(*product_range(a.bound, b.bound))
    bound = summed(a.dtype, term, k, product_error(a.bound, b.bound))
    out_dtype = builder.draw(st.sampled_from(("", f', out_dtype="{a.dtype}"')))
    builder.emit(f"R.matmul({a.name}, {b.name}{out_dtype})", _matmul_shape(a.shape, b.shape), a.dtype, bound,
                 (a, b), ref.matmul)


def _cumulative(a, axis, exclusive: bool):
    """numpy's cumsum; exclusive: each position's sum of those before it."""
    values = a.reshape(-1) if axis is None else a
    total = np.cumsum(values, axis=0 if axis is None else axis)
    return total - values if exclusive else total


def cumsum(builder) -> None:
    """`R.cumsum` along an axis or over the flattened tensor, inclusive or exclusive."""
    x = builder.operand(lambda v: _numeric(v) and v.rank >= 1, lambda: builder.shape(min_rank=1), NUMERIC_DTYPES)
    axis = builder.draw(st.sampled_from([None, *range(-x.rank, x.rank)]))
    count = x.size if axis is None else x.shape[axis]
    x = common.limit(builder, x, MAX_MAGNITUDE[x.dtype] / count)
    exclusive = builder.draw(st.booleans())
    partial = Bound(min(x.bound.lo, 0.0), max(x.bound.hi, 0.0))
    bound = summed(x.dtype, partial, count, x.bound.err)
    shape = (x.size,) if axis is None else x.shape
    builder.emit(f"R.cumsum({x.name}, axis={axis}, exclusive={exclusive})", shape, x.dtype, bound, (x,),
                 lambda a: _cumulative(a, axis, exclusive))


# -- softmax, layer_norm ---------------------------------------------------------------
def softmax(builder) -> None:
    """`R.nn.softmax` or `R.nn.log_softmax` along one axis."""
    x = builder.operand(lambda v: _float(v) and v.rank >= 1, lambda: builder.shape(min_rank=1), FLOAT_DTYPES)
    axis = builder.draw(st.integers(-x.rank, x.rank - 1))
    n = x.shape[axis]
    ulps = MATH_ULPS + n + 4
    if builder.draw(st.booleans()):
        # Shifting x by up to err changes each softmax output by a factor within exp(+-2 err).
        bound = computed(x.dtype, 0.0, 1.0, math.expm1(2 * x.bound.err), ulps)
        call, function = "R.nn.softmax", ref.softmax
    else:
        spread = x.bound.hi - x.bound.lo
        bound = computed(x.dtype, -spread - math.log(n), 0.0, 2 * x.bound.err, ulps)
        bound = Bound(bound.lo, bound.hi, bound.err + rounding(x.dtype, math.log(n) + 1, ulps))
        call, function = "R.nn.log_softmax", ref.log_softmax
    builder.emit(f"{call}({x.name}, axis={axis})", x.shape, x.dtype, bound, (x,),
                 lambda a: function(a, axis))


# Small epsilons make layer_norm ill-conditioned on rows of nearly equal values, and the
# error bound (which cannot know the rows) loose, or force small inputs (`_variance_safe`);
# larger ones keep it useful.
EPSILONS = (1e-5, 0.1, 1.0, 1e-3)


# layer_norm's statistics are float32 (TVM accumulates float16 data in float32 too).
STATISTICS = "float32"


def _layer_norm_bound(x: Bound, gamma: Bound, beta: Bound, count: int, epsilon: float, dtype: str) -> Bound:
    """(x - mean) / sqrt(var + epsilon) * gamma + beta, the mean and the variance each
    summed over `count` elements; the variance's error is below epsilon (`_variance_safe`)."""
    centered_err = 2 * x.err + (count + 2) * UNIT_ROUNDOFF[STATISTICS] * x.magnitude
    deviation_err = variance_error(x, count, STATISTICS) / (2 * math.sqrt(epsilon / 2))
    z_max = math.sqrt(max(count - 1, 0))  # |x_i - mean| <= sqrt(n - 1) * std
    z_err = (centered_err + z_max * deviation_err) / math.sqrt(epsilon / 2) + rounding(dtype, z_max, MATH_ULPS)
    z = Bound(-z_max, z_max, z_err)
    lo, hi = product_range(z, gamma)
    return computed(dtype, lo + beta.lo, hi + beta.hi, product_error(z, gamma) + beta.err)


def _variance_safe(builder, x, count: int, epsilon: float):
    """x clipped (or, when its error alone is too large, a new input) so that the rounding
    of TVM's one-pass variance, E[x^2] - E[x]^2, stays below epsilon / 2: var + epsilon
    stays positive and rsqrt finite."""
    largest = min(math.sqrt(MAX_MAGNITUDE[x.dtype] / count),
                  math.sqrt(epsilon / (16 * (count + 2) * UNIT_ROUNDOFF[STATISTICS])))
    x = common.limit(builder, x, largest)
    if variance_error(x.bound, count, STATISTICS) > epsilon / 2:
        x = common.limit(builder, builder.new_input(x.shape, x.dtype), largest)
    return x


def layer_norm(builder) -> None:
    """`R.nn.layer_norm` over the last one or two axes, gamma and beta new inputs."""
    x = builder.operand(lambda v: _float(v) and v.rank >= 1, lambda: builder.shape(min_rank=1), FLOAT_DTYPES)
    count_axes = builder.draw(st.integers(1, min(2, x.rank)))
    axes = list(range(x.rank - count_axes, x.rank))
    if builder.draw(st.booleans()):
        axes = [a - x.rank for a in axes]
    params_shape = x.shape[x.rank - count_axes:]
    count = math.prod(params_shape)
    epsilon = builder.draw(st.sampled_from(EPSILONS))
    x = _variance_safe(builder, x, count, epsilon)
    gamma = builder.new_input(params_shape, x.dtype)
    beta = builder.new_input(params_shape, x.dtype)
    bound = _layer_norm_bound(x.bound, gamma.bound, beta.bound, count, epsilon, x.dtype)
    call = (f"R.nn.layer_norm({x.name}, {gamma.name}, {beta.name}, axes={list_text(axes)}, "
            f"epsilon={epsilon!r}, center=True, scale=True)")
    in_dtype = float(np.asarray(epsilon, dtype=x.dtype))  # the kernel's epsilon is a constant of x's dtype
    builder.emit(call, x.shape, x.dtype, bound, (x, gamma, beta),
                 lambda a, g, b: ref.layer_norm(a, g, b, axes, in_dtype))


# -- conv2d, pooling -------------------------------------------------------------------
def _image(builder, accept=lambda v: True):
    """A float NCHW value, or a new small one."""

    def new_shape():
        batch = builder.draw(st.sampled_from((1, 2)))
        channels = builder.draw(st.sampled_from((1, 2, 3, 5)))
        return (batch, channels, *builder.dims(2, max_elements=MAX_ELEMENTS // (batch * channels) // 4))

    return builder.operand(lambda v: _float(v) and v.rank == 4 and accept(v), new_shape, FLOAT_DTYPES)


def _window_attrs(builder, max_kernel: int = 3):
    kernel = [builder.draw(st.integers(1, max_kernel)) for _ in range(2)]
    strides = [builder.draw(st.integers(1, 2)) for _ in range(2)]
    dilation = [builder.draw(st.integers(1, 2)) for _ in range(2)]
    return kernel, strides, dilation


def _conv_windows(x, kernel, strides, dilation, padding) -> list[int]:
    return [ref.window_count(x.shape[2 + axis], padding[axis], padding[2 + axis], kernel[axis], strides[axis],
                             dilation[axis]) for axis in range(2)]


def conv2d(builder) -> None:
    """`R.nn.conv2d`, NCHW/OIHW: strided, padded, dilated, grouped (depthwise) or not."""
    x = _image(builder, lambda v: v.shape[1] <= 16)
    channels = x.shape[1]
    kernel, strides, dilation = _window_attrs(builder)
    padding = [builder.draw(st.integers(0, 2)) for _ in range(4)]
    windows = _conv_windows(x, kernel, strides, dilation, padding)
    if 0 in windows:
        kernel, dilation = [1, 1], [1, 1]
        windows = _conv_windows(x, kernel, strides, dilation, padding)
    depthwise = channels > 1 and builder.draw(st.booleans())
    groups = channels if depthwise else 1
    room = max(1, MAX_ELEMENTS // (x.shape[0] * math.prod(windows)))
    out_channels = channels * builder.draw(st.integers(1, 2)) if depthwise else builder.dim(limit=min(room, 7))
    weight = builder.new_input((out_channels, channels // groups, *kernel), x.dtype)
    terms = channels // groups * math.prod(kernel)
    x = common.limit(builder, x, MAX_MAGNITUDE[x.dtype] / (terms * weight.bound.magnitude))
    bound = summed(x.dtype, Bound(*product_range(x.bound, weight.bound)), terms, product_error(x.bound, weight.bound))
    call = (f"R.nn.conv2d({x.name}, {weight.name}, strides={list_text(strides)}, padding={list_text(padding)}, "
            f'dilation={list_text(dilation)}, groups={groups}, data_layout="NCHW", kernel_layout="OIHW", '
            f'out_layout="NCHW", out_dtype="{x.dtype}")')
    builder.emit(call, (x.shape[0], out_channels, *windows), x.dtype, bound, (x, weight),
                 lambda a, w: ref.conv2d(a, w, strides, padding, dilation, groups))


def _pool_attrs(builder, x):
    """Pool attributes whose every window reads the input (a max over padding alone is not a number)."""
    kernel, strides, dilation = _window_attrs(builder)
    padding = [builder.draw(st.integers(0, kernel[axis % 2] // 2)) for axis in range(4)]
    ceil_mode = builder.draw(st.booleans())
    for axis in range(2):
        size = x.shape[2 + axis]
        if not ref.every_window_reads_input(size, padding[axis], padding[2 + axis], kernel[axis], strides[axis],
                                            dilation[axis], ceil_mode):
            kernel[axis], dilation[axis], padding[axis], padding[2 + axis] = 1, 1, 0, 0
    return kernel, strides, dilation, padding, ceil_mode


def pool2d(builder) -> None:
    """`R.nn.max_pool2d` or `R.nn.avg_pool2d`, NCHW, with padding, dilation and ceil_mode."""
    x = _image(builder)
    kernel, strides, dilation, padding, ceil_mode = _pool_attrs(builder, x)
    kind = builder.draw(st.sampled_from(("max", "avg")))
    count_include_pad = kind == "avg" and builder.draw(st.booleans())
    windows = [ref.window_count(x.shape[2 + axis], padding[axis], padding[2 + axis], kernel[axis], strides[axis],
                                dilation[axis], ceil_mode) for axis in range(2)]
    if kind == "max":
        bound = x.bound
    else:
        lo, hi = (min(x.bound.lo, 0.0), max(x.bound.hi, 0.0)) if count_include_pad else (x.bound.lo, x.bound.hi)
        bound = computed(x.dtype, lo, hi, x.bound.err, math.prod(kernel) + 2)
    call = (f"R.nn.{kind}_pool2d({x.name}, pool_size={list_text(kernel)}, strides={list_text(strides)}, "
            f"dilation={list_text(dilation)}, padding={list_text(padding)}, ceil_mode={ceil_mode}, "
            f'count_include_pad={count_include_pad}, layout="NCHW", out_layout="NCHW")')
    builder.emit(call, (*x.shape[:2], *windows), x.dtype, bound, (x,),
                 lambda a: ref.pool2d(a, kind, kernel, strides, dilation, padding, ceil_mode, count_include_pad))
