"""Builtins for elementwise operators on tensors whose shape is known only at run time.

LegalizeOps compiles R.exp(x) for an x of unknown rank to a kernel over the flat
element count, and R.add(a, b) to a kernel over a fixed number of dimensions
(BROADCAST_RANK) whose sizes and operand strides are runtime arguments. These
builtins give the kernels what they need, without doing any tensor math:

    vm.builtin.flatten(x)                      a 1-d view of x (x.size elements)
    vm.builtin.broadcast_shape(sa, sb, name)   numpy's broadcast of two shapes, or an error
    vm.builtin.broadcast_plan(sa, sb, rank)    output sizes, then a's strides, then b's strides

A plan describes the broadcast with adjacent dimensions merged where both operands
step through them alike (both read along, or one repeats), so that same-shape operands
become one loop over every element and (2, 3, 4) + (4,) becomes (6, 4). The merged
dimensions are padded on the left with size-1 dimensions to `rank`. A stride is in
elements of the operand's flat view, 0 where it repeats.
"""

from __future__ import annotations

import numpy as np

from ...runtime.errors import VMError
from ...runtime.objects import ShapeTuple, type_key
from ...runtime.cuda.tensors import is_device_array


def _dims(value, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple):
        raise VMError(f"{what} expects a Shape, got {type_key(value)}")
    return tuple(int(v) for v in value)


def _shape_text(dims: tuple[int, ...]) -> str:
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(str(d) for d in dims)})"


def _broadcast(lhs: tuple[int, ...], rhs: tuple[int, ...], name: str) -> tuple[int, ...]:
    """numpy's broadcast of two shapes: aligned on the right, each pair equal or one of them 1."""
    rank = max(len(lhs), len(rhs))
    lhs_padded, rhs_padded = (1,) * (rank - len(lhs)) + lhs, (1,) * (rank - len(rhs)) + rhs
    out = []
    for left, right in zip(lhs_padded, rhs_padded):
        if left != right and 1 not in (left, right):
            where = f" in {name}" if name else ""
            raise VMError(f"cannot broadcast {_shape_text(lhs)} with {_shape_text(rhs)}{where}")
        out.append(right if left == 1 else left)
    return tuple(out)


def flatten(tensor):
    """A 1-d view of a tensor (no copy: the VM's tensors are compact row-major)."""
    if not isinstance(tensor, np.ndarray) and not is_device_array(tensor):
        raise VMError(f"flatten expects a Tensor, got {type_key(tensor)}")
    return tensor.reshape(-1)


def broadcast_shape(lhs, rhs, name: str = "") -> ShapeTuple:
    """The shape of an elementwise result of operands of shapes `lhs` and `rhs`; an error
    naming the operator `name` (such as "R.add") when they do not broadcast."""
    return ShapeTuple(_broadcast(_dims(lhs, "broadcast_shape"), _dims(rhs, "broadcast_shape"), name))


def _strides(padded: tuple[int, ...], out: tuple[int, ...]) -> list[int]:
    """Row-major strides of an operand of shape `padded`, 0 along the dimensions it repeats."""
    strides, step = [0] * len(out), 1
    for axis in reversed(range(len(out))):
        strides[axis] = step if padded[axis] == out[axis] and out[axis] != 1 else 0
        step *= padded[axis]
    return strides


def broadcast_plan(lhs, rhs, rank: int, name: str = "") -> ShapeTuple:
    """`rank` output sizes, then `rank` strides of each operand (see the module docstring).
    A broadcast that needs more than `rank` dimensions after merging is an error."""
    lhs, rhs = _dims(lhs, "broadcast_plan"), _dims(rhs, "broadcast_plan")
    out = _broadcast(lhs, rhs, name)
    ndim = len(out)
    lhs_padded, rhs_padded = (1,) * (ndim - len(lhs)) + lhs, (1,) * (ndim - len(rhs)) + rhs
    lhs_strides, rhs_strides = _strides(lhs_padded, out), _strides(rhs_padded, out)
    merged: list[list[int]] = []  # [size, lhs stride, rhs stride] of each merged dimension
    for size, left, right in zip(out, lhs_strides, rhs_strides):
        if size == 1:
            continue  # a dimension of size 1 moves nothing
        if merged and _continues(merged[-1], size, left, right):
            merged[-1] = [merged[-1][0] * size, left, right]
        else:
            merged.append([size, left, right])
    if 0 in out:
        merged = [[0, 0, 0]]  # an empty result: no element is read
    if len(merged) > rank:
        where = f" in {name}" if name else ""
        raise VMError(f"broadcasting {_shape_text(lhs)} with {_shape_text(rhs)}{where} needs {len(merged)}"
                      f" dimensions after merging, more than the {rank} its kernel has")
    merged = [[1, 0, 0]] * (rank - len(merged)) + merged
    return ShapeTuple([m[0] for m in merged] + [m[1] for m in merged] + [m[2] for m in merged])


def _continues(outer: list[int], size: int, left: int, right: int) -> bool:
    """Whether a dimension (size, strides) merges into the one outside it: each operand
    either repeats along both, or steps through both contiguously."""
    return all((outer_stride == 0 and stride == 0) or (stride != 0 and outer_stride == stride * size)
               for outer_stride, stride in ((outer[1], left), (outer[2], right)))


BROADCAST_BUILTINS = {
    f"vm.builtin.{func.__name__}": func for func in (flatten, broadcast_shape, broadcast_plan)
}
