"""The operands of a float32 matmul nest, as the CPU matmul rules read them.

`C[..., i, j] += X[...] * Y[...]` with one reduction: X is the load free of j (A, one
broadcast per k step), Y the load that reads j contiguously in its last index (B, whole
vectors), or, for a weight packed at build time (packed_weights.py), in panels:
`packed[j // width, k, j % width]`. The register-tile and gemv rules and the
pack-constant-weights pass match their nests with it.
"""

from __future__ import annotations

from ...ir import tir
from ..loop_nests import uses
from ..rewrite import MISSING, NodeMemo
from . import reduction_order
from .nest import Nest


def matmul_operands(nest: Nest, panel_width: int | None = None):
    """(j-free load, j-contiguous load) of `C = C + X * Y`, or None; with `panel_width`, Y read
    in panels of that many columns instead (reads_panel)."""
    found = _product(nest)
    if found is None:
        return None
    x, y, j = found
    if not (reads_panel(y, j, panel_width) if panel_width else
            y.indices[-1] is j and not any(uses(i, j) for i in y.indices[:-1])):
        return None
    return x, y


def packed_width(nest: Nest) -> int | None:
    """The panel width of a product that reads B packed at build time (packed_weights.py),
    whatever the width: `packed[j // width, k, j % width]`; None for any other nest."""
    found = _product(nest)
    if found is None:
        return None
    _, y, j = found
    tile = y.indices[0] if len(y.indices) == 3 else None
    if not (isinstance(tile, tir.FloorDiv) and isinstance(tile.b, tir.IntImm) and tile.b.value > 0):
        return None
    return tile.b.value if reads_panel(y, j, tile.b.value) else None


# _product's latest answers: the rules and packed_width ask it of the same nests again and
# again, and the answer depends on the block alone.
_PRODUCTS = NodeMemo(64)


def _product(nest: Nest):
    """(X, Y, j) of a float32 `C[..., i, j] = C + X * Y` with one reduction, Y the load that
    uses j and X the one that does not, Y free of i; None for any other nest."""
    found = _PRODUCTS.get(nest.block)
    if found is MISSING:
        found = _find_product(nest)
        _PRODUCTS.put(nest.block, found)
    return found


def _find_product(nest: Nest):
    parts = reduction_order.reduction_parts(nest)
    if parts is None:
        return None
    store, spatial, reduce = parts
    value = store.value
    if len(reduce) != 1 or not isinstance(value, tir.Add) or not isinstance(value.b, tir.Mul):
        return None
    if store.buffer.dtype != "float32" or len(store.indices) < 2:
        return None
    j = store.indices[-1]
    x, y = value.b.a, value.b.b
    if not (isinstance(x, tir.BufferLoad) and isinstance(y, tir.BufferLoad)):
        return None
    if uses(x, j) and not uses(y, j):
        x, y = y, x  # the j-contiguous operand goes second
    if not uses(y, j) or uses(x, j):
        return None
    if uses(y, store.indices[-2]):  # one packed panel of B serves every row tile
        return None
    if x.dtype != "float32" or y.dtype != "float32":
        return None
    return x, y, j


def reads_panel(y: tir.BufferLoad, j: tir.Var, width: int) -> bool:
    """Whether `y` reads B already in panels of `width` columns: packed[j // width, k, j % width]
    (packed_weights.py)."""
    if len(y.indices) != 3:
        return False
    tile, k, lane = y.indices
    return (isinstance(tile, tir.FloorDiv) and tile.a is j and isinstance(tile.b, tir.IntImm) and tile.b.value == width
            and isinstance(lane, tir.FloorMod) and lane.a is j and isinstance(lane.b, tir.IntImm)
            and lane.b.value == width and not uses(k, j))
