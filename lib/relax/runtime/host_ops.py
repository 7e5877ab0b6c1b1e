"""Operators the runtime computes on the host: sorting and data-dependent shapes.

    relax.run.sort, relax.run.argsort, relax.run.topk    destination-passing: outputs given
    relax.run.unique, relax.run.nonzero,                 return new tensors (their size is
    relax.run.dynamic_strided_slice                       known only once the data is seen)
    relax.run.print, relax.run.assert_op                 effects: print, fail the run
    relax.run.shape_to_tensor                            a shape value as an int64 tensor

Legalization calls them by these names (op/sorting.py); the VM reaches them through
the PackedFunc registry like any builtin. numpy does the work: these are not loop
nests a kernel compiler improves on, and their output sizes need the data first.
"""

from __future__ import annotations

import numpy as np

from .registry import register_func


def _order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    # A stable sort, as TVM's: equal elements keep their order (reversed order when descending
    # is handled by sorting the negated key, which keeps ties in their original order).
    if descending:
        if x.dtype.kind == "b":
            return np.argsort(~x, axis=axis, kind="stable")
        if x.dtype.kind == "u":
            return np.argsort(np.iinfo(x.dtype).max - x, axis=axis, kind="stable")
        return np.argsort(-x, axis=axis, kind="stable")
    return np.argsort(x, axis=axis, kind="stable")


def sort(x, axis, descending, out):
    out[...] = np.take_along_axis(x, _order(x, int(axis), bool(descending)), int(axis))


def argsort(x, axis, descending, out):
    out[...] = _order(x, int(axis), bool(descending)).astype(out.dtype)


def topk(x, k, axis, largest, ret_type, *outputs):
    """The k largest (or smallest) along an axis: outputs are (values, indices), or only
    the values or only the indices as `ret_type` ("both", "values", "indices") says."""
    axis, k = int(axis), int(k)
    indices = np.take(_order(x, axis, bool(largest)), np.arange(k), axis=axis)
    results = {"values": np.take_along_axis(x, indices, axis), "indices": indices}
    wanted = ("values", "indices") if ret_type == "both" else (str(ret_type),)
    for name, out in zip(wanted, outputs):
        out[...] = results[name].astype(out.dtype)


# `axis` of unique when there is none (the input is flattened): an int, since every
# argument of a packed call is a runtime value.
NO_AXIS = -(2 ** 31)


def unique(x, sorted_, return_index, return_inverse, return_counts, axis):
    axis = None if int(axis) == NO_AXIS else int(axis)
    values, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    if not bool(sorted_):
        # First-occurrence order instead of sorted order.
        order = np.argsort(index, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values = np.take(values, order, axis=axis or 0) if axis is not None else values[order]
        index, counts, inverse = index[order], counts[order], rank[inverse.reshape(-1)]
    results = [np.ascontiguousarray(values)]
    if bool(return_index):
        results.append(index.astype("int64"))
    if bool(return_inverse):
        results.append(np.asarray(inverse).reshape(-1).astype("int64"))
    if bool(return_counts):
        results.append(counts.astype("int64"))
    return results[0] if len(results) == 1 else tuple(results)


def nonzero(x):
    return np.ascontiguousarray(np.stack(np.nonzero(x)).astype("int64"))


def print_values(format_string, *values):
    """R.print: the values, through `format_string` when one is given, on stdout."""
    shown = [str(np.asarray(v)) if isinstance(v, np.ndarray) else str(v) for v in values]
    print(format_string.format(*shown) if format_string else " ".join(shown), flush=True)


def assert_op(condition, format_string, *values):
    """R.assert_op: fails the run with the formatted message unless condition holds."""
    from .errors import VMError

    if not bool(np.asarray(condition)):
        shown = [str(np.asarray(v)) if isinstance(v, np.ndarray) else str(v) for v in values]
        message = format_string.format(*shown) if format_string else "assertion failed"
        raise VMError(f"AssertionError: {message}")


def shape_to_tensor(shape):
    return np.asarray(tuple(shape), dtype="int64")


def dynamic_strided_slice(x, begin, end, strides):
    """A slice whose bounds are tensors known only at run time (numpy clamping rules)."""
    slices = tuple(slice(int(b), int(e), int(s)) for b, e, s in zip(begin, end, strides))
    return np.ascontiguousarray(x[slices])


HOST_OPS = {
    "relax.run.sort": sort,
    "relax.run.argsort": argsort,
    "relax.run.topk": topk,
    "relax.run.unique": unique,
    "relax.run.nonzero": nonzero,
    "relax.run.print": print_values,
    "relax.run.assert_op": assert_op,
    "relax.run.shape_to_tensor": shape_to_tensor,
    "relax.run.dynamic_strided_slice": dynamic_strided_slice,
}

for _name, _func in HOST_OPS.items():
    register_func(_name, _func, override=True)
