"""Positions from index data, checked: the one helper of every op that addresses memory
with values it reads (take, gather_elements, scatter_elements, gather_nd, scatter_nd,
index_tensor, index_put).

    checked_position(index, extent, "R.take")

is `T.checked_index(index, extent, "R.take")` (tir/semantics.py): the position `index`
names on an axis of `extent` elements, a negative one counted from the end, and an
error that stops the kernel (exit 1 from relaxrun) for an index outside
[-extent, extent). TVM leaves such an index undefined behaviour; here it must never
read or write outside a buffer. The check costs one compare per index read.
"""

from __future__ import annotations

from ..ir import tir
from ..tir.semantics import CHECKED_INDEX


def checked_position(index: tir.PrimExpr, extent: tir.PrimExpr, what: str) -> tir.PrimExpr:
    """The int64 position of `index` on an axis of `extent`, checked at run time; `what`
    names the op in the error (e.g. "R.take")."""
    value = index if index.dtype == "int64" else tir.Cast("int64", index)
    extent = extent if extent.dtype == "int64" else tir.Cast("int64", extent)
    return tir.Call("int64", CHECKED_INDEX, (value, extent, tir.StringImm(what)))
