"""Storage tokens for StaticPlanBlockMemory: which allocations may share memory, and
where each one is used for the last time.

Every `R.builtin.alloc_tensor` of a known shape in the global scope makes a token.
Variables carry tokens: an allocation's variable its own, an alias (`lv = alloc`,
a match_cast of it) the same, a tuple the tokens of its fields, `t[i]` those of
field i. A use of a variable counts as a use of its tokens when it is an argument
of a call that reads it and keeps no reference: a kernel of the module
(`cls.add(a, b, alloc)`), a packed function in destination-passing style (it
returns nothing; TVM assumes it keeps nothing) or `R.vm.call_tir_dyn`. Any other
use lets the tensor escape and its token is never planned: returned from the
function or a branch, an `if` condition, an argument of an operator, of a Relax
function or of a packed call that returns a value (it may be a view of the
argument), captured by a local function.

    alloc = R.builtin.alloc_tensor(R.shape([4]), ...)   # token t0
    cls.exp(x, alloc)                                   # use 1 of t0
    lv = alloc                                          # lv carries t0
    cls.exp(lv, alloc1)                                 # use 2 of t0 (its last)
"""

from __future__ import annotations

from dataclasses import field
from typing import Union

from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import TupleStructInfo
from ..ir.visitor import pre_order
from ..op.infer import literal_of
from ..records import record

ALLOC_TENSOR = "relax.builtin.alloc_tensor"


@record(mutable=True, eq=False)
class Token:
    """One planned allocation: its binding, byte size and how often it is still read."""

    binding: rx.VarBinding
    dtype: str
    shape: tuple[tir.PrimExpr, ...]
    uses: int = 0
    escaped: bool = False
    scope: tuple[int, ...] = ()
    device: rx.Expr | None = None  # the runtime device index argument  # the chain of `if` branches the allocation sits in


# What a variable carries: a set of tokens, or a tuple of such structures.
Carried = Union[frozenset, tuple]
NOTHING: frozenset = frozenset()


def flatten(carried: Carried) -> set[Token]:
    if isinstance(carried, frozenset):
        return set(carried)
    out: set[Token] = set()
    for item in carried:
        out |= flatten(item)
    return out


def _is_allocation(value: rx.Expr) -> bool:
    if not (isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name == ALLOC_TENSOR):
        return False
    scope = value.args[3] if len(value.args) > 3 else None
    return isinstance(value.args[0], rx.ShapeExpr) and (scope is None or literal_of(scope) == "global")


@record(mutable=True)
class TokenAnalysis:
    """Tokens of one function, and the tokens each binding reads (keyed by id)."""

    tokens: dict[int, Token] = field(default_factory=dict)  # id(allocation binding) -> token
    reads: dict[int, list[Token]] = field(default_factory=dict)  # id(binding) -> tokens it uses


class TokenCollector:
    """Walks a function in program order (branches in order) and fills a TokenAnalysis."""

    def __init__(self, mod):
        self.mod = mod
        self.carried: dict[int, Carried] = {}
        self.result = TokenAnalysis()
        self.scope: tuple[int, ...] = ()
        self.branches = 0

    def run(self, func: rx.Function) -> TokenAnalysis:
        self.seq(func.body)
        return self.result

    # ---- structure --------------------------------------------------------------------

    def seq(self, seq: rx.Expr) -> None:
        if not isinstance(seq, rx.SeqExpr):
            self.escape(seq)
            return
        for block in seq.blocks:
            for binding in block.bindings:
                self.binding(binding)
        self.escape(seq.body)

    def carried_by(self, expr: rx.Expr) -> Carried:
        if isinstance(expr, rx.Var):
            return self.carried.get(id(expr), NOTHING)
        if isinstance(expr, rx.Tuple):
            return tuple(self.carried_by(f) for f in expr.fields)
        if isinstance(expr, rx.TupleGetItem):
            inner = self.carried_by(expr.tuple_value)
            if isinstance(inner, tuple) and 0 <= expr.index < len(inner):
                return inner[expr.index]
            return frozenset(flatten(inner))
        return NOTHING

    def escape(self, expr: rx.Expr) -> None:
        """Every token reachable from a variable in `expr` escapes."""
        for node in pre_order(expr):
            if isinstance(node, rx.Var):
                for token in flatten(self.carried.get(id(node), NOTHING)):
                    token.escaped = True

    def read(self, binding: rx.Binding, args) -> None:
        used: list[Token] = []
        for arg in args:
            if isinstance(arg, (rx.Var, rx.Tuple, rx.TupleGetItem)):
                used.extend(flatten(self.carried_by(arg)))
            else:
                self.escape(arg)
        for token in used:
            token.uses += 1
        self.result.reads.setdefault(id(binding), []).extend(used)

    # ---- bindings ---------------------------------------------------------------------

    def binding(self, binding: rx.Binding) -> None:
        value = binding.value
        if isinstance(binding, rx.VarBinding) and _is_allocation(value):
            token = Token(binding, literal_of(value.args[1]), tuple(value.args[0].values), scope=self.scope,
                          device=value.args[2] if len(value.args) > 2 else None)
            self.result.tokens[id(binding)] = token
            self.carried[id(binding.var)] = frozenset((token,))
            return
        if isinstance(value, (rx.Var, rx.Tuple, rx.TupleGetItem)):
            self.carried[id(binding.var)] = self.carried_by(value)
            return
        if isinstance(value, rx.If):
            self.escape(value.cond)
            for branch in (value.true_branch, value.false_branch):
                self.branches += 1
                outer, self.scope = self.scope, self.scope + (self.branches,)
                self.seq(branch)
                self.scope = outer
            return
        if isinstance(value, rx.Call) and self.reads_without_keeping(value, binding.var):
            args = value.args[1].fields if _is_call_tir_dyn(value) and isinstance(value.args[1], rx.Tuple) else value.args
            self.read(binding, args)
            return
        self.escape(value)

    def reads_without_keeping(self, call: rx.Call, result: rx.Var) -> bool:
        callee = call.op
        if _is_call_tir_dyn(call):
            return True
        if isinstance(callee, rx.ExternFunc):
            # A packed call in destination-passing style returns nothing; one that
            # returns a value may return (a view of) an argument.
            info = result.struct_info
            return isinstance(info, TupleStructInfo) and not info.fields
        if isinstance(callee, rx.GlobalVar) and self.mod is not None and callee.name_hint in self.mod:
            return isinstance(self.mod[callee.name_hint], tir.PrimFunc)
        return False


def _is_call_tir_dyn(call: rx.Call) -> bool:
    return isinstance(call.op, rx.Op) and call.op.name == "relax.vm.call_tir_dyn"
