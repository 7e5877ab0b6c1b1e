"""Struct info: what Relax knows statically about a value (TVM's StructInfo).

    ObjectStructInfo     anything
    PrimStructInfo       a scalar of a dtype, perhaps with a known value
    ShapeStructInfo      a shape: its values (PrimExprs), or only its ndim, or nothing
    TensorStructInfo     a tensor: shape (a ShapeExpr or a shape Var) or only ndim, and dtype
    TupleStructInfo      a tuple of struct infos
    FuncStructInfo       a callable: parameter and return struct info, purity

ndim -1 and dtype "void" mean unknown.
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


def with_span(info: StructInfo, span) -> StructInfo:
    return dataclasses.replace(info, span=span)
