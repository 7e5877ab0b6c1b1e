"""Questions the parser asks of the expressions it built: linear forms, substitution.

A vector index `A[i * 4:i * 4 + 4]` has a constant length, an access region over a loop
sweeps its variable's range, and `range(j, j + 2)` has extent 2: each needs the
difference of two expressions as a constant, or an expression with a variable
replaced and re-folded (tir_ops.binary), as TVM's analyzer answers them.
"""

from __future__ import annotations

from ..ir import tir
from .tir_ops import as_expr, binary, make_const


def structural_key(value) -> object:
    """A hashable key equal for structurally equal expressions (variables and
    buffers by identity), for the few comparisons the parser itself needs."""
    if isinstance(value, (tir.Var, tir.Buffer)):
        return (type(value).__name__, id(value))
    if isinstance(value, tir.PrimExpr) or isinstance(value, tir.Range):
        from ..ir.node import field_values

        return (type(value).__name__,) + tuple(structural_key(v) for _, v in field_values(value))
    if isinstance(value, (tuple, list)):
        return tuple(structural_key(v) for v in value)
    return value


def _linear(expr: tir.PrimExpr, scale: int, terms: dict, constant: list) -> None:
    """Adds scale * expr to a sum of (atom -> coefficient) terms and a constant."""
    if isinstance(expr, tir.IntImm):
        constant[0] += scale * expr.value
    elif isinstance(expr, tir.Add):
        _linear(expr.a, scale, terms, constant)
        _linear(expr.b, scale, terms, constant)
    elif isinstance(expr, tir.Sub):
        _linear(expr.a, scale, terms, constant)
        _linear(expr.b, -scale, terms, constant)
    elif isinstance(expr, tir.Mul) and isinstance(expr.b, tir.IntImm):
        _linear(expr.a, scale * expr.b.value, terms, constant)
    elif isinstance(expr, tir.Mul) and isinstance(expr.a, tir.IntImm):
        _linear(expr.b, scale * expr.a.value, terms, constant)
    else:
        key = structural_key(expr)
        terms[key] = terms.get(key, 0) + scale


def constant_difference(a: tir.PrimExpr, b: tir.PrimExpr) -> int | None:
    """a - b when it is a constant (`i * 4 + 4` minus `i * 4` is 4), else None."""
    terms: dict = {}
    constant = [0]
    _linear(a, 1, terms, constant)
    _linear(b, -1, terms, constant)
    return constant[0] if all(c == 0 for c in terms.values()) else None


def extent_between(start: tir.PrimExpr, stop: tir.PrimExpr) -> tir.PrimExpr:
    """stop - start, simplified to a constant when the difference is one (as TVM's
    analyzer does for `A[i:i + 4]` and `range(j, j + 2)`)."""
    difference = constant_difference(stop, start)
    if difference is not None:
        return make_const(difference, start.dtype)
    return as_expr(binary(tir.Sub, stop, start))


def substitute(expr: tir.PrimExpr, mapping: dict) -> tir.PrimExpr:
    """`expr` with variables replaced (by identity), constants re-folded."""
    if not mapping:
        return expr
    if isinstance(expr, tir.Var):
        return mapping.get(expr, expr)
    if isinstance(expr, tir.BinaryOp):
        a, b = substitute(expr.a, mapping), substitute(expr.b, mapping)
        if a is expr.a and b is expr.b:
            return expr
        return as_expr(binary(type(expr), a, b))
    from ..ir.node import field_values

    changes = {}
    for name, value in field_values(expr):
        if isinstance(value, tir.PrimExpr):
            new = substitute(value, mapping)
        elif isinstance(value, tuple) and all(isinstance(v, tir.PrimExpr) for v in value):
            new = tuple(substitute(v, mapping) for v in value)
        else:
            continue
        if new is not value and new != value:
            changes[name] = new
    return expr.with_fields(**changes) if changes else expr


def uses_var(expr, var: tir.Var) -> bool:
    if expr is var:
        return True
    if isinstance(expr, (tir.Var, tir.Buffer)) or not isinstance(expr, (tir.PrimExpr, tir.Range, tuple)):
        return False
    if isinstance(expr, tuple):
        return any(uses_var(v, var) for v in expr)
    from ..ir.node import field_values

    return any(uses_var(v, var) for _, v in field_values(expr))


def linear_coefficient(expr: tir.PrimExpr, var: tir.Var) -> int | None:
    """c when `expr` is c * var plus terms without var; None when var occurs otherwise."""
    terms: dict = {}
    _linear(expr, 1, terms, [0])
    key = structural_key(var)
    coefficient = terms.pop(key, 0)
    # var must not hide inside another atom (i // 4, A[i], ...).
    if any(uses_var_key(atom_key, key) for atom_key in terms):
        return None
    return coefficient


def uses_var_key(key, var_key) -> bool:
    if key == var_key:
        return True
    return isinstance(key, tuple) and any(uses_var_key(k, var_key) for k in key)
