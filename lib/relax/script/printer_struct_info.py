"""Printing Relax struct info: `R.Tensor((n, 4), dtype="float32")`, `R.Shape([2])`, ...

TVM 0.27 spells ObjectStructInfo `R.Any` and a PrimStructInfo `T.int64`; a prim
struct info with a known value (which 0.27 cannot express) prints as
`R.Prim(value=n)`. `same_struct_info` compares two struct infos structurally, for
the bindings whose annotation TVM leaves out because the call already states it.
"""

from __future__ import annotations

from ..ir import struct_info as si
from ..ir import tir
from ..ir.dtensor import DTensorStructInfo, same_layout
from . import printer_doc as doc
from .printer_values import same_expr
from .relax_dtensor import print_dtensor


def same_struct_info(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, si.ObjectStructInfo):
        return True
    if isinstance(a, si.PrimStructInfo):
        return a.dtype == b.dtype and _same_optional_expr(a.value, b.value)
    if isinstance(a, si.ShapeStructInfo):
        return a.ndim == b.ndim and _same_values(a.values, b.values)
    if isinstance(a, si.TensorStructInfo):
        if a.dtype != b.dtype or a.ndim != b.ndim or a.vdevice != b.vdevice or not same_layout(a, b):
            return False
        if a.shape_values is not None or b.shape_values is not None:
            return _same_values(a.shape_values, b.shape_values)
        return a.shape is b.shape
    if isinstance(a, si.TupleStructInfo):
        return len(a.fields) == len(b.fields) and all(map(same_struct_info, a.fields, b.fields))
    if isinstance(a, si.FuncStructInfo):
        if a.purity != b.purity or not same_struct_info(a.ret, b.ret):
            return False
        if a.params is None or b.params is None:
            return a.params is None and b.params is None
        return len(a.params) == len(b.params) and all(map(same_struct_info, a.params, b.params))
    return False


def _same_optional_expr(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return same_expr(a, b)


def _same_values(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return len(a) == len(b) and all(map(same_expr, a, b))


class StructInfoPrinter:
    """Prints struct info; `exprs` prints dimensions (signature or body rules)."""

    def __init__(self, ctx, exprs, signature: bool, relax_expr=None):
        self.ctx = ctx
        self.exprs = exprs
        self.signature = signature
        self.relax_expr = relax_expr  # prints a shape Var of a tensor

    def dim(self, value) -> str:
        if self.signature and not isinstance(value, (tir.Var, tir.IntImm)):
            return doc.string_text(self.exprs.expr(value))
        return self.exprs.expr(value)

    def print(self, info) -> str:
        ctx = self.ctx
        if isinstance(info, DTensorStructInfo):
            return print_dtensor(self, info)
        if isinstance(info, si.TensorStructInfo):
            return self._tensor(info)
        if isinstance(info, si.ShapeStructInfo):
            if info.values is not None:
                return f"{ctx.relax('Shape')}({doc.list_text([self.dim(v) for v in info.values])})"
            return f"{ctx.relax('Shape')}(ndim={info.ndim})"
        if isinstance(info, si.TupleStructInfo):
            if not info.fields:
                return ctx.relax("Tuple")
            return doc.call(ctx.relax("Tuple"), [self.print(f) for f in info.fields])
        if isinstance(info, si.ObjectStructInfo):
            return ctx.relax("Any")
        if isinstance(info, si.PrimStructInfo):
            if info.value is not None:
                return f"{ctx.relax('Prim')}(value={self.exprs.expr(info.value)})"
            return ctx.tir(info.dtype)
        if isinstance(info, si.FuncStructInfo):
            ret = self.print(info.ret)
            purity = doc.bool_text(info.purity)
            if info.params is None:
                # An opaque callable: TVM's defaults are "returns anything" and impure.
                kwargs = [] if isinstance(info.ret, si.ObjectStructInfo) else [("ret", ret)]
                if info.purity:
                    kwargs.append(("purity", purity))
                return doc.call(ctx.relax("Callable"), [], kwargs) if kwargs else ctx.relax("Callable")
            params = doc.tuple_text([self.print(p) for p in info.params])
            return doc.call(ctx.relax("Callable"), [params, ret, purity])
        raise TypeError(f"cannot print struct info {type(info).__name__}")

    def _tensor(self, info: si.TensorStructInfo) -> str:
        args = []
        values = info.shape_values
        if values is not None:
            args.append(doc.tuple_text([self.dim(v) for v in values]))
        elif info.shape is not None and self.relax_expr is not None:
            args.append(self.relax_expr(info.shape))
        kwargs = []
        if info.dtype != "void":
            kwargs.append(("dtype", doc.string_text(info.dtype)))
        if values is None and info.shape is None and info.ndim != -1:
            kwargs.append(("ndim", str(info.ndim)))
        if info.vdevice is not None:
            kwargs.append(("vdevice", doc.string_text(info.vdevice)))
        if not args and not kwargs:
            return self.ctx.relax("Tensor")
        return doc.call(self.ctx.relax("Tensor"), args, kwargs)
