"""Relax expressions, bindings and functions.

A Relax function body is a SeqExpr: binding blocks (ordinary or dataflow) whose
bindings define variables, then a result expression. Calls name their callee: an
operator (`Op("relax.add")`), a function of the module (`GlobalVar`), an external
packed function (`ExternFunc`), or a variable holding a closure.
"""

from __future__ import annotations

import numpy as np

from . import dtype as dt
from . import tir_expr as tir
from .node import EMPTY, FrozenDict, Node, node
from .struct_info import ObjectStructInfo, PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo


@node
class Expr(Node):
    """Base of every Relax expression."""


@node
class Var(Expr):
    name_hint: str
    struct_info: StructInfo | None = None


@node
class DataflowVar(Var):
    """A variable local to a dataflow block; only R.output makes it visible after."""


@node
class GlobalVar(Expr):
    """The name of a function of the IRModule; compared by name."""

    name_hint: str


@node
class Constant(Expr):
    """A constant tensor (the array is read-only) or a scalar constant."""

    data: np.ndarray

    def __post_init__(self):
        if self.data.flags.writeable:
            frozen = np.array(self.data, copy=True)
            frozen.flags.writeable = False
            object.__setattr__(self, "data", frozen)

    @property
    def struct_info(self) -> TensorStructInfo:
        shape = ShapeExpr(tuple(tir.IntImm("int64", int(d)) for d in self.data.shape))
        return TensorStructInfo(shape, dt.from_numpy(self.data.dtype))


def frozen(array: np.ndarray) -> np.ndarray:
    """`array` made read-only in place, for a fresh array that only its maker holds (a result,
    a loaded file's array): a Constant keeps a read-only array as it is, where it copies
    a writable one, so that a weight is not copied at each pass that makes one. The arrays
    it views (an aligned allocation's buffer) are made read-only too."""
    view = array
    while isinstance(view, np.ndarray) and view.flags.writeable:
        view.flags.writeable = False
        view = view.base
    return array


@node
class Tuple(Expr):
    fields: tuple[Expr, ...]


@node
class TupleGetItem(Expr):
    tuple_value: Expr
    index: int


@node
class ShapeExpr(Expr):
    values: tuple[tir.PrimExpr, ...]

    @property
    def struct_info(self) -> ShapeStructInfo:
        return ShapeStructInfo(self.values)


@node
class PrimValue(Expr):
    value: tir.PrimExpr

    @property
    def struct_info(self) -> PrimStructInfo:
        return PrimStructInfo(self.value.dtype, self.value)


@node
class StringImm(Expr):
    value: str

    @property
    def struct_info(self) -> ObjectStructInfo:
        return ObjectStructInfo()


@node
class DataTypeImm(Expr):
    value: str

    @property
    def struct_info(self) -> ObjectStructInfo:
        return ObjectStructInfo()


@node
class Op(Expr):
    """An operator by its registered name, e.g. "relax.add" or "relax.nn.conv2d"."""

    name: str


@node
class ExternFunc(Expr):
    """A packed function found by name at run time."""

    global_symbol: str


@node
class PyFunction(Expr):
    """A Python function of a BasePyModule (`@I.py_func`), kept as its source text.

    `source` is the method as written in the module (decorator and `def` line included,
    dedented to column 0); the printer writes it back verbatim, so a round trip is exact.
    Passes leave it alone: it runs in Python, bound by relax.BasePyModule, or through
    R.call_py_func at run time. (TVM keeps it as an ExternFunc with the text in its attrs.)"""

    name: str
    source: str


@node
class Call(Expr):
    op: Expr
    args: tuple[Expr, ...]
    attrs: FrozenDict = EMPTY
    sinfo_args: tuple[StructInfo, ...] = ()


@node
class If(Expr):
    cond: Expr
    true_branch: Expr
    false_branch: Expr


@node
class Binding(Node):
    var: Var


@node
class VarBinding(Binding):
    value: Expr


@node
class MatchCast(Binding):
    """Binds `var` to `value` after checking at run time that it matches struct_info."""

    value: Expr
    struct_info: StructInfo


@node
class BindingBlock(Node):
    bindings: tuple[Binding, ...]


@node
class DataflowBlock(BindingBlock):
    """A block of pure bindings; its DataflowVars do not outlive it."""


@node
class SeqExpr(Expr):
    blocks: tuple[BindingBlock, ...]
    body: Expr


@node
class Function(Expr):
    params: tuple[Var, ...]
    body: Expr
    ret_struct_info: StructInfo | None = None
    is_pure: bool = True
    attrs: FrozenDict = EMPTY

    @property
    def global_symbol(self) -> str | None:
        return self.attrs.get("global_symbol")

    @property
    def is_private(self) -> bool:
        return "global_symbol" not in self.attrs


def const(value, dtype: str | None = None) -> Constant:
    """A Constant from a Python scalar or an array, as `R.const(value, dtype)`."""
    array = np.asarray(value, dtype=dt.to_numpy(dtype) if dtype else None)
    if dtype is None and array.dtype == np.float64:
        array = array.astype(np.float32)
    if dtype is None and array.dtype == np.int64 and np.ndim(value) == 0:
        array = array.astype(np.int32)
    return Constant(array)
