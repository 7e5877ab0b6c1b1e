"""Shared helpers of the TIR parser tests: parse snippets and dump IR as nested tuples."""

from __future__ import annotations

import ast
import dataclasses

from relax.ir import FrozenDict, tir
from relax.ir.node import Node, field_values
from relax.script.context import ParseAbort, ParseContext, Scope
from relax.script.prim_expr import parse_prim_expr


def dump(value):
    """A node as nested tuples: (TypeName, field, ...); variables and buffers by name."""
    if isinstance(value, tir.Var):
        return f"{value.name}:{value.dtype}"
    if isinstance(value, tir.Buffer):
        return f"buffer {value.name}"
    if isinstance(value, tir.IntImm):
        return ("IntImm", value.dtype, value.value)
    if isinstance(value, tir.FloatImm):
        return ("FloatImm", value.dtype, value.value)
    if isinstance(value, Node):
        return (type(value).__name__,) + tuple(dump(v) for _, v in field_values(value))
    if isinstance(value, (tuple, list)):
        return tuple(dump(v) for v in value)
    if isinstance(value, FrozenDict):
        return {k: dump(v) for k, v in value.items()}
    return value


def expr(text: str, scope: Scope | None = None, default_int_dtype: str = "int32"):
    """(PrimExpr or None if abandoned, [(line:col, message)])."""
    ctx = ParseContext("t.py", text)
    node = ast.parse(text, mode="eval").body
    try:
        result = parse_prim_expr(node, ctx, scope or Scope(), default_int_dtype)
    except ParseAbort:
        result = None
    return result, [(f"{d.span.line}:{d.span.column}", d.message) for d in ctx.diagnostics]


def prim_func(text: str, scope: Scope | None = None):
    """(PrimFunc or None, [(line:col, message)]) for the first function of `text`."""
    from relax.script.tir_parser import parse_prim_func

    ctx = ParseContext("t.py", text)
    tree = ast.parse(text)
    func_def = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    try:
        result = parse_prim_func(func_def, ctx, scope or Scope())
    except ParseAbort:
        result = None
    return result, [(f"{d.span.line}:{d.span.column}", d.message) for d in ctx.diagnostics]


def only_ok(text: str, scope: Scope | None = None):
    func, errors = prim_func(text, scope)
    assert errors == []
    return func
