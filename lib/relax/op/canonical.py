"""Symbolic sizes in one canonical form, as TVM's arithmetic analyzer writes them.

An operator's inferred struct info is put through `canonical_struct_info`: every
symbolic size is rewritten by the TIR simplifier, so `R.concat((x, x))` on a
tensor of shape (n,) gives (n * 2,), not (0 + n + n,). The canonical form is what
later passes bind, compare and print: the VM's shape lowering and the kernels see
`n * 2` whether the program wrote `n * 2`, `2 * n` or `n + n`. `same_size` compares
two sizes through the canonical form of their difference, so `n * 2` and `2 * n`
(or `n + m` and `m + n`) are the same size.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.struct_info import PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from ..tir.arith.simplifier import simplify_expr


def canonical_dim(dim: tir.PrimExpr) -> tir.PrimExpr:
    """`dim` in canonical form (unchanged when it is a constant or a bare variable)."""
    if isinstance(dim, (tir.IntImm, tir.Var)) or not isinstance(dim, tir.PrimExpr):
        return dim
    return simplify_expr(dim)


def same_size(a: tir.PrimExpr, b: tir.PrimExpr) -> bool:
    """Whether two integer sizes are provably equal (their difference simplifies to 0)."""
    if a is b:
        return True
    if a.dtype != b.dtype:
        return False
    difference = simplify_expr(tir.Sub(a, b))
    return isinstance(difference, tir.IntImm) and difference.value == 0


def _canonical_dims(dims: tuple) -> tuple:
    new = tuple(canonical_dim(d) for d in dims)
    return dims if all(x is y for x, y in zip(new, dims)) else new


def canonical_struct_info(info: StructInfo) -> StructInfo:
    """`info` with every symbolic size in canonical form (the same object when nothing changes)."""
    if isinstance(info, TensorStructInfo):
        values = info.shape_values
        if values is None:
            return info
        new = _canonical_dims(values)
        return info if new is values else info.with_fields(shape=info.shape.with_fields(values=new))
    if isinstance(info, ShapeStructInfo) and info.values is not None:
        new = _canonical_dims(info.values)
        return info if new is info.values else info.with_fields(values=new)
    if isinstance(info, PrimStructInfo) and info.value is not None:
        value = canonical_dim(info.value)
        return info if value is info.value else info.with_fields(value=value)
    if isinstance(info, TupleStructInfo):
        fields = tuple(canonical_struct_info(f) for f in info.fields)
        return info if all(x is y for x, y in zip(fields, info.fields)) else info.with_fields(fields=fields)
    return info
