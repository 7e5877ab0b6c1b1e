"""Shape expressions for kernel metadata, and the workspace plan of a kernel.

`shape_to_json` turns a PrimExpr over symbolic sizes into the JSON tree the loader
evaluates (runtime/kernels/metadata.py). `workspace_plan` gives each workspace
Allocate its byte offset in the caller's workspace and the total size needed,
both as int64 PrimExprs over the kernel's parameters and symbolic sizes.
"""

from __future__ import annotations

from ..diagnostics import UserError
from ..ir import dtype as dt
from ..ir import tir
from ..runtime.kernels.abi import WORKSPACE_ALIGNMENT

_OPS = {
    tir.Add: "add", tir.Sub: "sub", tir.Mul: "mul", tir.Div: "div", tir.Mod: "mod",
    tir.FloorDiv: "floordiv", tir.FloorMod: "floormod", tir.Min: "min", tir.Max: "max",
}


def shape_to_json(expr: tir.PrimExpr):
    if isinstance(expr, tir.IntImm):
        return int(expr.value)
    if isinstance(expr, tir.Var):
        return expr.name
    if isinstance(expr, tir.Cast):
        return shape_to_json(expr.value)
    op = _OPS.get(type(expr))
    if op is None:
        raise UserError(f"codegen: shape expression {type(expr).__name__} cannot be described in kernel metadata")
    return [op, shape_to_json(expr.a), shape_to_json(expr.b)]


def _int64(expr: tir.PrimExpr) -> tir.PrimExpr:
    return expr if expr.dtype == "int64" else tir.Cast("int64", expr)


def _add(a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    if isinstance(a, tir.IntImm) and isinstance(b, tir.IntImm):
        return tir.IntImm("int64", a.value + b.value)
    if isinstance(a, tir.IntImm) and a.value == 0:
        return b
    return tir.Add(a, b)


def _aligned_bytes(stmt: tir.Allocate) -> tir.PrimExpr:
    size = tir.IntImm("int64", dt.itemsize(stmt.dtype))
    constant = 1
    symbolic = []
    for extent in stmt.extents:
        if isinstance(extent, tir.IntImm):
            constant *= extent.value
        else:
            symbolic.append(_int64(extent))
    if not symbolic:
        total = constant * size.value
        return tir.IntImm("int64", -(-total // WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT)
    expr: tir.PrimExpr = tir.IntImm("int64", constant * size.value)
    for extent in symbolic:
        expr = tir.Mul(expr, extent)
    align = tir.IntImm("int64", WORKSPACE_ALIGNMENT)
    return tir.Mul(tir.FloorDiv(tir.Add(expr, tir.IntImm("int64", WORKSPACE_ALIGNMENT - 1)), align), align)


def _is_workspace(stmt: tir.Allocate) -> bool:
    from .codegen_stmt import STACK_LIMIT_BYTES

    wanted = stmt.annotations.get("storage") if stmt.annotations else None
    if wanted in ("stack", "workspace"):
        return wanted == "workspace"
    if all(isinstance(e, tir.IntImm) for e in stmt.extents):
        count = 1
        for extent in stmt.extents:
            count *= extent.value
        return count * dt.itemsize(stmt.dtype) > STACK_LIMIT_BYTES
    return True


def workspace_plan(body: tir.Stmt) -> tuple[dict, tir.PrimExpr]:
    """({Allocate: offset}, total bytes) for workspace allocations outside parallel loops."""
    offsets: dict = {}
    total: tir.PrimExpr = tir.IntImm("int64", 0)

    def walk(stmt):
        nonlocal total
        if isinstance(stmt, tir.For) and stmt.kind == "parallel":
            return
        if isinstance(stmt, tir.Allocate) and _is_workspace(stmt):
            offsets[stmt] = total
            total = _add(total, _aligned_bytes(stmt))
        for name in ("seq",):
            for item in getattr(stmt, name, ()):
                walk(item)
        for name in ("body", "then_case", "else_case"):
            child = getattr(stmt, name, None)
            if isinstance(child, tir.Stmt):
                walk(child)

    walk(body)
    return offsets, total
