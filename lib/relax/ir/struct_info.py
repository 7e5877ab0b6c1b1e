"""Struct info: what Relax knows statically about a value (TVM's StructInfo).

    ObjectStructInfo     anything
    PrimStructInfo       a scalar of a dtype, perhaps with a known value
    ShapeStructInfo      a shape: its values (PrimExprs), or only its ndim, or nothing
    TensorStructInfo     a tensor: shape (a ShapeExpr or a shape Var) or only ndim, and dtype
    TupleStructInfo      a tuple of struct infos
    FuncStructInfo       a callable: parameter and return struct info, purity

ndim -1 and dtype "void" mean unknown.

Tuples and callables nest at most MAX_NESTING deep (Normalize refuses deeper ones where
they are written or inferred): the lowered module is TVMScript that Python's parser reads
back, and Python refuses more than 200 nested parentheses, of which the printer spends
about two per level.

A tensor's known dimensions must leave its element count and size in bytes within int64
(`oversized_tensor`): the lowered module computes sizes and offsets as int64 constants.
"""

from __future__ import annotations

import dataclasses

from .node import Node, node
from .tir_expr import PrimExpr


@node
class StructInfo(Node):
    """Base of every struct info."""


@node
class ObjectStructInfo(StructInfo):
    pass


@node
class PrimStructInfo(StructInfo):
    dtype: str = "void"
    value: PrimExpr | None = None


@node
class ShapeStructInfo(StructInfo):
    values: tuple[PrimExpr, ...] | None = None
    ndim: int = -1

    def __post_init__(self):
        if self.values is not None and self.ndim != len(self.values):
            object.__setattr__(self, "ndim", len(self.values))


@node
class TensorStructInfo(StructInfo):
    shape: object | None = None  # a relax ShapeExpr or a Var of shape struct info
    dtype: str = "void"
    ndim: int = -1
    vdevice: str | None = None

    def __post_init__(self):
        values = self.shape_values
        if values is not None and self.ndim != len(values):
            object.__setattr__(self, "ndim", len(values))

    @property
    def shape_values(self) -> tuple[PrimExpr, ...] | None:
        """The dimensions when the shape is a literal ShapeExpr, else None."""
        values = getattr(self.shape, "values", None)
        return tuple(values) if values is not None else None


@node
class TupleStructInfo(StructInfo):
    fields: tuple[StructInfo, ...] = ()


@node
class FuncStructInfo(StructInfo):
    params: tuple[StructInfo, ...] | None
    ret: StructInfo
    purity: bool = True


MAX_NESTING = 64


def nesting_depth(info: StructInfo | None, limit: int = MAX_NESTING) -> int:
    """Levels of tuples and callables in `info`, counted up to limit + 1 (level by level,
    each shared node once: `(t, t)` nested n times is n levels, not 2**n nodes)."""
    depth, level = 0, {id(info): info}
    while depth <= limit:
        inner: dict[int, StructInfo] = {}
        for item in level.values():
            if isinstance(item, TupleStructInfo):
                inner.update((id(field), field) for field in item.fields)
            elif isinstance(item, FuncStructInfo):
                inner.update((id(field), field) for field in (*(item.params or ()), item.ret))
        if not any(isinstance(item, (TupleStructInfo, FuncStructInfo)) for item in level.values()):
            break
        depth += 1
        level = inner
    return depth


INT64_MAX = 2**63 - 1


def oversized_tensor(info: StructInfo | None) -> tuple[TensorStructInfo, int] | None:
    """The first tensor in `info` (in tuples and callables too) whose constant dimensions
    alone make its size in bytes exceed int64, with that size; None when there is none.
    A symbolic dimension counts as 1: the constant part is folded at compile time."""
    from . import dtype as dt
    from .tir_expr import IntImm

    pending, seen = [info], set()
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, TupleStructInfo):
            pending.extend(item.fields)
        elif isinstance(item, FuncStructInfo):
            pending.extend((*(item.params or ()), item.ret))
        elif isinstance(item, TensorStructInfo) and item.shape_values is not None:
            size = dt.itemsize(item.dtype) if item.dtype != "void" and dt.is_valid(item.dtype) else 1
            for dim in item.shape_values:
                size *= dim.value if isinstance(dim, IntImm) and dim.value > 0 else 1
            if size > INT64_MAX:
                return item, size
    return None


def with_span(info: StructInfo, span) -> StructInfo:
    return dataclasses.replace(info, span=span)
