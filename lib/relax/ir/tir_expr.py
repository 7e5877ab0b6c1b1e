"""TIR expressions (PrimExpr): the scalar and index arithmetic of kernels and shapes.

Every PrimExpr has a `dtype`. It is a stored field where the node chooses it
(variables, constants, casts, intrinsic calls) and a derived property where the
operands decide it (arithmetic takes its operands' type, comparisons give bool).
Symbolic shape variables of Relax functions are TIR `Var`s too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import dtype as dt
from .node import Node, node

if TYPE_CHECKING:
    from .expr import GlobalVar


@node
class PrimExpr(Node):
    """Base of every TIR expression."""


@node
class Var(PrimExpr):
    name: str
    dtype: str = "int32"


@node
class SizeVar(Var):
    """A variable known to be non-negative (a size)."""


@node
class IntImm(PrimExpr):
    dtype: str
    value: int


@node
class FloatImm(PrimExpr):
    dtype: str
    value: float

    def __post_init__(self):
        # T.float32(0) built in memory is the T.float32(0.0) its text reads back as.
        if type(self.value) is not float and isinstance(self.value, (int, float)):
            object.__setattr__(self, "value", float(self.value))


@node
class StringImm(PrimExpr):
    value: str

    @property
    def dtype(self) -> str:
        return "handle"


@node
class Cast(PrimExpr):
    dtype: str
    value: PrimExpr


@node
class BinaryOp(PrimExpr):
    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> str:
        return self.a.dtype


@node
class Add(BinaryOp):
    pass


@node
class Sub(BinaryOp):
    pass


@node
class Mul(BinaryOp):
    pass


@node
class Div(BinaryOp):
    """Division truncating toward zero for integers (C semantics), exact for floats."""


@node
class Mod(BinaryOp):
    """Remainder with the sign of the dividend (truncmod)."""


@node
class FloorDiv(BinaryOp):
    pass


@node
class FloorMod(BinaryOp):
    pass


@node
class Min(BinaryOp):
    pass


@node
class Max(BinaryOp):
    pass


@node
class CompareOp(BinaryOp):
    @property
    def dtype(self) -> str:
        return dt.with_lanes("bool", dt.lanes(self.a.dtype))


@node
class EQ(CompareOp):
    pass


@node
class NE(CompareOp):
    pass


@node
class LT(CompareOp):
    pass


@node
class LE(CompareOp):
    pass


@node
class GT(CompareOp):
    pass


@node
class GE(CompareOp):
    pass


@node
class And(CompareOp):
    pass


@node
class Or(CompareOp):
    pass


@node
class Not(PrimExpr):
    a: PrimExpr

    @property
    def dtype(self) -> str:
        return self.a.dtype


@node
class Select(PrimExpr):
    """Both values are evaluated; the condition picks one (T.Select)."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    @property
    def dtype(self) -> str:
        return self.true_value.dtype


@node
class BufferLoad(PrimExpr):
    buffer: "Buffer"
    indices: tuple[PrimExpr, ...]

    @property
    def dtype(self) -> str:
        lanes = 1
        for index in self.indices:
            lanes = max(lanes, dt.lanes(index.dtype))
        return dt.with_lanes(self.buffer.dtype, lanes) if lanes > 1 else self.buffer.dtype


@node
class Ramp(PrimExpr):
    base: PrimExpr
    stride: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.base.dtype, self.lanes)


@node
class Broadcast(PrimExpr):
    value: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.value.dtype, self.lanes)


@node
class Shuffle(PrimExpr):
    """Lanes picked from concatenated vectors (T.Shuffle): lane k is element indices[k]."""

    vectors: tuple[PrimExpr, ...]
    indices: tuple[PrimExpr, ...]

    @property
    def dtype(self) -> str:
        return dt.with_lanes(dt.element(self.vectors[0].dtype), len(self.indices))


@node
class Let(PrimExpr):
    var: Var
    value: PrimExpr
    body: PrimExpr

    @property
    def dtype(self) -> str:
        return self.body.dtype


@node
class Call(PrimExpr):
    """A call to an intrinsic or extern by name: "tir.exp", "tir.if_then_else", ...; or of
    another function of the module, by its GlobalVar (`Module.f(...)` in TVMScript)."""

    dtype: str
    op: str | GlobalVar
    args: tuple[PrimExpr, ...]


@node
class Range(Node):
    min: PrimExpr
    extent: PrimExpr


@node
class IterVar(Node):
    """A block iterator or a thread axis; iter_type is one of ITER_TYPES."""

    var: Var
    dom: Range | None
    iter_type: str = "DataPar"
    thread_tag: str = ""


ITER_TYPES = ("DataPar", "CommReduce", "Ordered", "Opaque", "ThreadIndex")


@node
class Buffer(Node):
    """A typed, shaped view of memory. `data` is the handle variable backing it."""

    name: str
    shape: tuple[PrimExpr, ...]
    dtype: str = "float32"
    data: Var | None = None
    strides: tuple[PrimExpr, ...] = ()
    elem_offset: PrimExpr | None = None
    scope: str = "global"
    axis_separators: tuple[int, ...] = ()
    offset_factor: int = 0
    align: int = 0

    @property
    def ndim(self) -> int:
        return len(self.shape)


def const(value, dtype: str | None = None) -> PrimExpr:
    """An IntImm or FloatImm; the dtype defaults as TVM's does (int32, float32, bool)."""
    if isinstance(value, bool):
        return IntImm(dtype or "bool", int(value))
    if isinstance(value, int):
        return IntImm(dtype or "int32", value)
    if isinstance(value, float):
        if dtype is not None and not dt.is_float(dtype):
            return IntImm(dtype, int(value))
        return FloatImm(dtype or "float32", value)
    raise TypeError(f"cannot make a TIR constant of {value!r}")


# Arithmetic operators on PrimExpr, so index expressions read naturally in passes
# and legalizations (`i * 4 + j`). Comparisons are NOT overloaded: `==` keeps its
# identity meaning on nodes; use the EQ/LT/... classes.
def _coerce(value, like: PrimExpr) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        return IntImm("bool", int(value))
    scalar = dt.element(like.dtype)
    if isinstance(value, int):
        return FloatImm(scalar, float(value)) if dt.is_float(scalar) else IntImm(scalar, value)
    if isinstance(value, float):
        return FloatImm(scalar if dt.is_float(scalar) else "float32", value)
    raise TypeError(f"cannot use {value!r} in a TIR expression")


def _int_value(expr: PrimExpr):
    return expr.value if isinstance(expr, IntImm) and dt.lanes(expr.dtype) == 1 and expr.dtype != "bool" else None


def _folded(cls, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`cls(a, b)` with the integer folds TVM's operators make (x + 0, x - 0, x * 1,
    x * 0, x // 1, x % 1, constants of one dtype): the parser reads printed text through
    the same folds (script/tir_ops.py), so an expression built here reads back as itself."""
    ca, cb = _int_value(a), _int_value(b)
    if a.dtype != b.dtype or (ca is None and cb is None) or cls not in _FOLDS:
        return cls(a, b)
    if ca is not None and cb is not None:
        value = _FOLDS[cls](ca, cb) if cb != 0 or cls in (Add, Sub, Mul) else None
        bits = dt.bits(a.dtype)
        low, high = (0, 1 << bits) if a.dtype.startswith("uint") else (-(1 << (bits - 1)), 1 << (bits - 1))
        return IntImm(a.dtype, value) if value is not None and low <= value < high else cls(a, b)
    if (cls is Add and ca == 0) or (cls is Mul and (ca == 1 or cb == 0)):
        return b
    if (cls in (Add, Sub) and cb == 0) or (cls is Mul and (cb == 1 or ca == 0)):
        return a
    if cls is FloorDiv and (ca == 0 or cb == 1):
        return a
    if cls is FloorMod and (ca == 0 or cb == 1):
        return a if ca == 0 else IntImm(a.dtype, 0)
    return cls(a, b)


_FOLDS = {Add: lambda x, y: x + y, Sub: lambda x, y: x - y, Mul: lambda x, y: x * y,
          FloorDiv: lambda x, y: x // y, FloorMod: lambda x, y: x % y}


def _binary(cls):
    def forward(self, other):
        return _folded(cls, self, _coerce(other, self))

    def backward(self, other):
        return _folded(cls, _coerce(other, self), self)

    return forward, backward


PrimExpr.__add__, PrimExpr.__radd__ = _binary(Add)
PrimExpr.__sub__, PrimExpr.__rsub__ = _binary(Sub)
PrimExpr.__mul__, PrimExpr.__rmul__ = _binary(Mul)
PrimExpr.__floordiv__, PrimExpr.__rfloordiv__ = _binary(FloorDiv)
PrimExpr.__mod__, PrimExpr.__rmod__ = _binary(FloorMod)
PrimExpr.__truediv__, PrimExpr.__rtruediv__ = _binary(Div)
PrimExpr.__neg__ = lambda self: Sub(_coerce(0, self), self)
