"""Generator rules for operators that move elements without computing: reshape,
permute_dims, concat, strided_slice, expand_dims, squeeze, flip, broadcast_to.

They are exact, so a result's bound is its operands' (hull of intervals, largest error).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from error_bounds import Bound
from gen_common import DIMS, MAX_ELEMENTS, MAX_RANK, list_text, tuple_text


def _prime_factors(number: int) -> list[int]:
    factors, divisor = [], 2
    while number > 1:
        while number % divisor == 0:
            factors.append(divisor)
            number //= divisor
        divisor += 1
    return factors


def reshape(builder) -> None:
    """`R.reshape` to another factorization of the size, sometimes with one -1."""
    x = builder.operand(lambda v: True, builder.shape)
    factors = _prime_factors(x.size)
    rank = builder.draw(st.integers(0 if x.size == 1 else 1, MAX_RANK))
    dims = [1] * rank
    for factor in factors:
        dims[builder.draw(st.integers(0, rank - 1))] *= factor
    spelled = list(dims)
    if rank and builder.draw(st.booleans()):
        spelled[builder.draw(st.integers(0, rank - 1))] = -1
    builder.emit(f"R.reshape({x.name}, R.shape({list_text(spelled)}))", dims, x.dtype, x.bound, (x,),
                 lambda a: a.reshape(dims))


def permute_dims(builder) -> None:
    """`R.permute_dims` by a drawn permutation, or axes=None (reversed)."""
    x = builder.operand(lambda v: v.rank >= 2, lambda: builder.shape(min_rank=2))
    if builder.draw(st.integers(0, 3)) == 3:
        axes, text = tuple(reversed(range(x.rank))), "None"
    else:
        axes = tuple(builder.draw(st.permutations(range(x.rank))))
        text = list_text(axes)
    shape = tuple(x.shape[a] for a in axes)
    builder.emit(f"R.permute_dims({x.name}, axes={text})", shape, x.dtype, x.bound, (x,),
                 lambda a: np.transpose(a, axes))


def _hull(values) -> Bound:
    return Bound(min(v.bound.lo for v in values), max(v.bound.hi for v in values),
                 max(v.bound.err for v in values))


def concat(builder) -> None:
    """`R.concat` of two or three tensors along an axis where their sizes may differ."""
    x = builder.operand(lambda v: v.rank >= 1, lambda: builder.shape(min_rank=1))
    axis = builder.draw(st.integers(-x.rank, x.rank - 1))
    position = axis % x.rank
    parts = [x]
    for _ in range(builder.draw(st.integers(1, 2))):
        total = sum(p.shape[position] for p in parts)
        room = (MAX_ELEMENTS // (x.size // x.shape[position])) - total
        if room < 1:
            break

        def fits(v, room=room):
            same_elsewhere = v.rank == x.rank and all(
                d == e for a, (d, e) in enumerate(zip(v.shape, x.shape)) if a != position)
            return v.dtype == x.dtype and same_elsewhere and v.shape[position] <= room

        def new_shape(room=room):
            return x.shape[:position] + (builder.dim(limit=room),) + x.shape[position + 1:]

        parts.append(builder.operand(fits, new_shape, (x.dtype,)))
    shape = list(x.shape)
    shape[position] = sum(p.shape[position] for p in parts)
    names = ", ".join(p.name for p in parts) + ("," if len(parts) == 1 else "")  # a 1-tuple when nothing fits
    builder.emit(f"R.concat(({names}), axis={axis})", shape, x.dtype, _hull(parts), tuple(parts),
                 lambda *arrays: np.concatenate(arrays, axis=axis))


def _slice_of_axis(builder, dim: int) -> tuple[int, int, int]:
    """begin, end, stride selecting at least one element of an axis of size `dim`."""
    stride = builder.draw(st.sampled_from((1, 2, 3, -1, -2)))
    begin = builder.draw(st.integers(0, dim - 1))
    if stride > 0:
        # An end past the axis is clamped, as in numpy.
        end = builder.draw(st.integers(begin + 1, dim + 2))
        if builder.draw(st.booleans()):
            begin -= dim  # the same position, counted from the end
    else:
        # Ends stay >= 0: a negative end counts from the back in both TVM and numpy.
        if begin == 0:
            stride = 1
            end = builder.draw(st.integers(1, dim))
        else:
            end = builder.draw(st.integers(0, begin - 1))
    return begin, end, stride


def strided_slice(builder) -> None:
    """`R.strided_slice` over some axes, positive or negative strides, ends past the edge."""
    x = builder.operand(lambda v: v.rank >= 1, lambda: builder.shape(min_rank=1))
    axes = [a for a in range(x.rank) if builder.draw(st.booleans())] or [x.rank - 1]
    if builder.draw(st.booleans()):
        axes = axes[::-1]
    bounds = [_slice_of_axis(builder, x.shape[a]) for a in axes]
    slices = [slice(None)] * x.rank
    for axis, (begin, end, stride) in zip(axes, bounds):
        slices[axis] = slice(begin, end, stride)
    shape = np.empty(x.shape, np.int8)[tuple(slices)].shape
    begins, ends, strides = zip(*bounds)
    strides_text = "" if set(strides) == {1} and builder.draw(st.booleans()) else f", {tuple_text(strides)}"
    call = (f"R.strided_slice({x.name}, {tuple_text(axes)}, {tuple_text(begins)}, {tuple_text(ends)}"
            f"{strides_text}, assume_inbound=False)")
    builder.emit(call, shape, x.dtype, x.bound, (x,), lambda a: a[tuple(slices)])


def _expand_dims(builder, x) -> None:
    axis = builder.draw(st.integers(-x.rank - 1, x.rank))
    shape = list(x.shape)
    shape.insert(axis % (x.rank + 1), 1)
    builder.emit(f"R.expand_dims({x.name}, axis={list_text([axis])})", shape, x.dtype, x.bound, (x,),
                 lambda a: np.expand_dims(a, axis))


def _squeeze(builder, x) -> None:
    ones = [a for a, d in enumerate(x.shape) if d == 1]
    if builder.draw(st.booleans()):
        axes, text = tuple(ones), "None"
    else:
        axes = tuple(a for a in ones if builder.draw(st.booleans())) or (ones[0],)
        text = list_text(axes)
    shape = [d for a, d in enumerate(x.shape) if a not in axes]
    builder.emit(f"R.squeeze({x.name}, axis={text})", shape, x.dtype, x.bound, (x,),
                 lambda a: np.squeeze(a, axis=axes))


def _flip(builder, x) -> None:
    axis = builder.draw(st.integers(-x.rank, x.rank - 1))
    builder.emit(f"R.flip({x.name}, axis={axis})", x.shape, x.dtype, x.bound, (x,),
                 lambda a: np.flip(a, axis))


def _broadcast_to(builder, x) -> None:
    shape = [builder.dim(limit=7) if d == 1 and builder.draw(st.booleans()) else d for d in x.shape]
    if len(shape) < MAX_RANK and builder.draw(st.booleans()):
        shape.insert(0, builder.draw(st.sampled_from(DIMS[:4])))
    if math.prod(shape) > MAX_ELEMENTS:
        shape = list(x.shape)
    builder.emit(f"R.broadcast_to({x.name}, R.shape({list_text(shape)}))", shape, x.dtype, x.bound, (x,),
                 lambda a: np.broadcast_to(a, shape))


# numpy's names of relax's pad modes; reflect and circular repeat at most once (TVM's bound).
PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad_fits(mode: str, size: int, width: int) -> bool:
    if mode == "reflect":
        return width < size
    if mode == "circular":
        return width <= size
    return True


def pad(builder) -> None:
    """`R.nn.pad` with a constant, reflected, replicated or circular border on each axis."""
    x = builder.operand(lambda v: v.rank >= 1, lambda: builder.shape(min_rank=1))
    mode = builder.draw(st.sampled_from(tuple(PAD_MODES) if x.kind != "bool" else ("replicate", "circular")))
    widths = []
    for size in x.shape:
        pair = [builder.draw(st.integers(0, 2)) for _ in range(2)]
        widths.append(tuple(w if _pad_fits(mode, size, w) else 0 for w in pair))
    shape = tuple(size + before + after for size, (before, after) in zip(x.shape, widths))
    if math.prod(shape) > MAX_ELEMENTS:
        widths, shape = [(0, 0)] * x.rank, x.shape
    value = builder.draw(st.sampled_from((0, 1))) if mode == "constant" else 0
    bound = Bound(min(x.bound.lo, value), max(x.bound.hi, value), x.bound.err) if mode == "constant" else x.bound
    spelled = float(value) if x.kind == "float" else value
    call = (f"R.nn.pad({x.name}, pad_width={list_text([w for pair in widths for w in pair])}, "
            f'pad_value={spelled}, pad_mode="{mode}")')
    options = {"constant_values": value} if mode == "constant" else {}
    builder.emit(call, shape, x.dtype, bound, (x,), lambda a: np.pad(a, widths, mode=PAD_MODES[mode], **options))


def _tile(builder, x) -> None:
    count = builder.draw(st.integers(1, MAX_RANK))
    repeats = [builder.draw(st.integers(1, 3)) for _ in range(count)]
    shape = np.tile(np.empty(x.shape, np.int8), repeats).shape
    if len(shape) > MAX_RANK or math.prod(shape) > MAX_ELEMENTS:
        repeats, shape = [1], x.shape if x.rank else (1,)
    builder.emit(f"R.tile({x.name}, repeats={list_text(repeats)})", shape, x.dtype, x.bound, (x,),
                 lambda a: np.tile(a, repeats))


def expand_squeeze_flip(builder) -> None:
    """One of expand_dims, squeeze, flip, broadcast_to, tile, where it applies."""
    x = builder.operand(lambda v: True, builder.shape)
    rules = [_broadcast_to, _tile]
    if x.rank < MAX_RANK:
        rules.append(_expand_dims)
    if 1 in x.shape:
        rules.append(_squeeze)
    if x.rank >= 1:
        rules.append(_flip)
    builder.draw(st.sampled_from(rules))(builder, x)
