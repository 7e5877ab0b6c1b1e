"""Pieces every GPU rule builds with: thread_binding loops, index arithmetic, allocations, intrinsics.

All index arithmetic of a rule is done in one dtype (`index`, the dtype of the nest's
loop variables, usually int64 after legalization); extents of another dtype are cast.
"""

from __future__ import annotations

from ...ir import tir
from ..convert_blocks_to_loops import allocation


def imm(dtype: str, value: int) -> tir.IntImm:
    return tir.IntImm(dtype, value)


def as_index(expr, index: str):
    return expr if expr.dtype == index else tir.Cast(index, expr)


def product(exprs, index: str):
    """The product of `exprs`, folded when they are all constants."""
    total = imm(index, 1)
    for expr in exprs:
        expr = as_index(expr, index)
        if isinstance(total, tir.IntImm) and isinstance(expr, tir.IntImm):
            total = imm(index, total.value * expr.value)
        elif isinstance(total, tir.IntImm) and total.value == 1:
            total = expr
        else:
            total = tir.Mul(total, expr)
    return total


def ceildiv(a, b: int, index: str):
    """ceil(a / b) for a non-negative `a` and a positive constant `b`, folded when constant."""
    if isinstance(a, tir.IntImm):
        return imm(index, -(-a.value // b))
    return tir.FloorDiv(tir.Add(a, imm(index, b - 1)), imm(index, b))


def split_index(flat, extents, index: str) -> list:
    """Row-major coordinates of `flat` over `extents` (outermost first); the first needs no modulo
    because callers guard `flat` < the product."""
    coords, rest = [], flat
    for extent in reversed(list(extents)[1:]):
        extent = as_index(extent, index)
        coords.insert(0, tir.FloorMod(rest, extent))
        rest = tir.FloorDiv(rest, extent)
    coords.insert(0, rest)
    return coords


def thread_loop(var: tir.Var, extent, tag: str, body: tir.Stmt) -> tir.For:
    return tir.For(var, imm(var.dtype, 0), extent, "thread_binding", body, thread_tag=tag)


def launch(index: str, name: str, grid: dict, block: dict, make_body):
    """Thread-bound loops around `make_body(indices)`: `grid` and `block` map an axis ("x", "y",
    "z") to its extent; `indices` maps "blockIdx.x" ... to the loop variables."""
    tags = [(f"blockIdx.{axis}", extent) for axis, extent in grid.items()] + \
        [(f"threadIdx.{axis}", extent) for axis, extent in block.items()]
    variables = {tag: tir.Var(f"{name}_{tag.replace('Idx.', '')}", index) for tag, _ in tags}
    stmt = make_body(variables)
    for tag, extent in reversed(tags):
        stmt = thread_loop(variables[tag], as_index(extent, index), tag, stmt)
    return stmt


def scoped_buffer(name: str, dtype: str, shape, scope: str = "local") -> tir.Buffer:
    """A buffer for a `local` (per-thread) or `shared` (per-block) allocation."""
    return tir.Buffer(name, tuple(imm("int64", s) if isinstance(s, int) else s for s in shape), dtype,
                      tir.Var(name, "handle"), scope=scope)


def allocate(buffer: tir.Buffer, body: tir.Stmt) -> tir.Stmt:
    return allocation(buffer, body)


def sync() -> tir.Stmt:
    """__syncthreads()."""
    return tir.Evaluate(tir.Call("int32", "tir.tvm_storage_sync", (tir.StringImm("shared"),)))


def shuffle_down(value, offset: int, width: int = 32) -> tir.PrimExpr:
    """__shfl_down_sync(__activemask(), value, offset, width)."""
    mask = tir.Call("uint32", "tir.tvm_warp_activemask", ())
    return tir.Call(value.dtype, "tir.tvm_warp_shuffle_down",
                    (mask, value, imm("int32", offset), imm("int32", width), imm("int32", 32)))


def seq(*stmts) -> tir.Stmt:
    flat = [s for s in stmts if s is not None]
    return flat[0] if len(flat) == 1 else tir.SeqStmt(tuple(flat))
