"""Operators the runtime computes on the host: sorting and data-dependent shapes.

    relax.run.sort, relax.run.argsort, relax.run.topk    destination-passing: outputs given
    relax.run.unique, relax.run.nonzero                  return new tensors (their size is
                                                          known only once the data is seen)

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


HOST_OPS = {
    "relax.run.sort": sort,
    "relax.run.argsort": argsort,
    "relax.run.topk": topk,
    "relax.run.unique": unique,
    "relax.run.nonzero": nonzero,
}

for _name, _func in HOST_OPS.items():
    register_func(_name, _func, override=True)
