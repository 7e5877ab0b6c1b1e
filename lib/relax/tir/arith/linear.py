"""Integer expressions as linear combinations: sum(coeff * atom) + constant.

`from_expr` reads Add, Sub, Mul-by-constant and constants; any other integer
expression is an atom (kept whole, identified by `expr_key`, its structure with
variables and buffers by identity). `to_expr` writes a combination back in one
canonical order: terms by decreasing |coefficient|, ties in order of first
appearance, the constant last (`i * 128 + j + 3`). Because Add, Sub and Mul are
ring operations, this is exact even when the arithmetic wraps.

`merge_division_pairs` rewrites `floordiv(x, d) * d + floormod(x, d)` (and the
truncating pair) back to `x`: the split-then-fuse pattern of scheduled indices.
"""

from __future__ import annotations

from dataclasses import field

from ...ir import dtype as dt
from ...ir import tir
from ...ir.node import Node, field_names
from ...records import record
from .. import semantics


def expr_key(expr):
    """A hashable key equal for structurally equal expressions (variables by identity)."""
    if isinstance(expr, tir.Var):
        return ("var", id(expr))
    if isinstance(expr, tir.IntImm):
        return ("int", expr.dtype, expr.value)
    if isinstance(expr, tir.FloatImm):
        return ("float", expr.dtype, repr(expr.value))
    if isinstance(expr, tir.Buffer):
        return ("buffer", id(expr))
    if isinstance(expr, Node):
        return (type(expr).__name__,) + tuple(expr_key(getattr(expr, name)) for name in field_names(type(expr)))
    if isinstance(expr, tuple):
        return tuple(expr_key(item) for item in expr)
    return ("value", repr(expr))


@record(mutable=True)
class Linear:
    """sum(coeff * atom) + const over one integer dtype."""

    dtype: str
    terms: dict = field(default_factory=dict)  # key -> [atom, coeff], insertion ordered
    const: int = 0

    def copy(self) -> "Linear":
        return Linear(self.dtype, {k: [a, c] for k, (a, c) in self.terms.items()}, self.const)

    def add_term(self, atom, coeff: int) -> None:
        key = expr_key(atom)
        if key in self.terms:
            self.terms[key][1] += coeff
        else:
            self.terms[key] = [atom, coeff]

    def plus(self, other: "Linear", factor: int = 1) -> "Linear":
        result = self.copy()
        for atom, coeff in other.terms.values():
            result.add_term(atom, coeff * factor)
        result.const += other.const * factor
        return result

    def scaled(self, factor: int) -> "Linear":
        return Linear(self.dtype).plus(self, factor)

    def nonzero(self) -> list:
        return [(atom, coeff) for atom, coeff in self.terms.values() if coeff != 0]

    @property
    def is_const(self) -> bool:
        return not self.nonzero()


def from_expr(expr) -> Linear:
    """The linear combination `expr` denotes (atoms for anything non-linear)."""
    return _accumulate(expr, 1, None)


def _accumulate(expr, factor: int, into: Linear | None) -> Linear:
    """`into` plus factor * `expr`'s combination (a new Linear, of the dtype `expr`'s own would
    have, when `into` is None). A sum is added term by term into one Linear: adding the
    combinations of its operands copied the terms at every level of a chain."""
    if isinstance(expr, tir.IntImm):
        if into is None:
            return Linear(expr.dtype, const=expr.value * factor)
        into.const += expr.value * factor
        return into
    if isinstance(expr, tir.Add):
        return _accumulate(expr.b, factor, _accumulate(expr.a, factor, into))
    if isinstance(expr, tir.Sub):
        return _accumulate(expr.b, -factor, _accumulate(expr.a, factor, into))
    if isinstance(expr, tir.Mul):
        if isinstance(expr.a, tir.IntImm):  # a constant times a combination: that combination, scaled
            return _accumulate(expr.b, factor * expr.a.value, into)
        if isinstance(expr.b, tir.IntImm):
            return _accumulate(expr.a, factor * expr.b.value, into)
        a, b = from_expr(expr.a), from_expr(expr.b)
        if a.is_const or b.is_const:
            inner, scale = (b, a.const) if a.is_const else (a, b.const)
            into = Linear(inner.dtype) if into is None else into
            for atom, coeff in inner.terms.values():
                into.add_term(atom, coeff * scale * factor)
            into.const += inner.const * scale * factor
            return into
    into = Linear(expr.dtype) if into is None else into
    into.add_term(expr, factor)
    return into


def _imm(dtype: str, value: int) -> tir.IntImm:
    return tir.IntImm(dtype, semantics.wrap(value, dtype))


def _term(atom, coeff: int, dtype: str):
    magnitude = abs(coeff)
    return atom if magnitude == 1 else tir.Mul(atom, _imm(dtype, magnitude))


def to_expr(linear: Linear):
    """The canonical expression of a combination."""
    dtype = linear.dtype
    linear = merge_division_pairs(linear)  # its constant too: x of a merged pair may carry one
    terms = [(atom, _signed(coeff, dtype)) for atom, coeff in linear.nonzero()]
    terms = [(atom, coeff) for atom, coeff in terms if coeff != 0]
    order = {id(atom): index for index, (atom, _) in enumerate(terms)}
    terms.sort(key=lambda item: (-abs(item[1]), order[id(item[0])]))
    const = _signed(linear.const, dtype)
    if not terms:
        return _imm(dtype, const)
    positive = [t for t in terms if t[1] > 0]
    negative = [t for t in terms if t[1] < 0]
    if positive:
        result = _term(*positive[0], dtype)
        rest = positive[1:]
    else:
        atom, coeff = negative.pop(0)
        result = tir.Mul(atom, _imm(dtype, coeff))
        rest = []
    for atom, coeff in rest:
        result = tir.Add(result, _term(atom, coeff, dtype))
    for atom, coeff in negative:
        result = tir.Sub(result, _term(atom, coeff, dtype))
    if const > 0:
        result = tir.Add(result, _imm(dtype, const))
    elif const < 0 and _signed(-const, dtype) > 0:
        result = tir.Sub(result, _imm(dtype, -const))
    elif const < 0:
        result = tir.Add(result, _imm(dtype, const))
    return result


def _signed(value: int, dtype: str) -> int:
    """`value` reduced to the dtype's width, read as a signed number (ring-equivalent)."""
    bits = dt.bits(dtype)
    half = 1 << (bits - 1)
    return ((value + half) % (1 << bits)) - half


_PAIRS = ((tir.FloorDiv, tir.FloorMod), (tir.Div, tir.Mod))


def merge_division_pairs(linear: Linear) -> Linear:
    """`c*d*floordiv(x, d) + c*floormod(x, d)` -> `c*x` (same for truncdiv/truncmod)."""
    result = linear.copy()
    changed = True
    while changed:
        changed = False
        for key, (atom, coeff) in list(result.terms.items()):
            match = _pair_partner(result, atom, coeff)
            if match is None:
                continue
            div_key, div_atom = match
            del result.terms[key]
            del result.terms[div_key]
            result = result.plus(from_expr(atom.a), coeff)
            changed = True
            break
    return result


def _pair_partner(linear: Linear, atom, coeff: int):
    for div_type, mod_type in _PAIRS:
        if type(atom) is not mod_type or coeff == 0 or not isinstance(atom.b, tir.IntImm):
            continue
        wanted = expr_key(div_type(atom.a, atom.b))
        entry = linear.terms.get(wanted)
        if entry is not None and entry[1] == coeff * atom.b.value:
            return wanted, entry[0]
    return None
