"""Which bindings may be removed or merged: the purity of a value.

A call is pure when its operator is registered pure (R.print and R.assert_op are
not), when it is call_tir / call_pure_packed / a pure Relax function, and never when
it is a plain packed call (`R.call_packed`), which may do anything.
"""

from __future__ import annotations

from ..ir import expr as rx
from ..op import registry


def is_pure(value: rx.Expr, mod=None) -> bool:
    if isinstance(value, rx.Call):
        callee = value.op
        if isinstance(callee, rx.Op):
            op = registry.get(callee.name)
            return op is not None and op.pure
        if isinstance(callee, rx.ExternFunc):
            return False
        if isinstance(callee, rx.GlobalVar) and mod is not None and callee.name_hint in mod:
            func = mod[callee.name_hint]
            return isinstance(func, rx.Function) and func.is_pure
        return False
    if isinstance(value, rx.If):
        return False
    return True
