"""A lowered GPU PrimFunc split into its launches, with each launch's grid and block.

The body of a function scheduled for a GPU is, under DeclBuffers, workspace
Allocates and LetStmts, a sequence of launches: each top-level loop nest whose
outermost loop is a `thread_binding` loop is one `__global__` function, launched
in order. A top-level statement with no thread binding (which the default GPU
schedule does not leave) runs as its own 1 x 1 launch. Each GPU axis's launch
dimension is the largest extent of the loops bound to it in that launch (loops
with a smaller extent are guarded by stmt.py).

Top-level Allocates are device memory shared by the launches. One of constant
size is a `__device__` array of the module (no runtime support needed; a kernel's
launches run one after another on one stream). One of symbolic size is carved
out of the kernel's workspace (one extra pointer parameter,
WORKSPACE_ALIGNMENT-aligned slices), whose size KernelInfo.workspace_bytes gives. Top-level LetStmts and
AssertStmts are repeated at the start of every launch.
"""

from __future__ import annotations

from dataclasses import field

from ...diagnostics import UserError
from ...ir import dtype as dt
from ...ir import tir
from ...ir.structural import structural_equal
from ...records import record
from ...runtime.kernels.abi import WORKSPACE_ALIGNMENT
from ...tir.rewrite import substitute
from .stmt import GPU_AXES


@record(mutable=True)
class Launch:
    body: tir.Stmt
    dims: dict  # GPU axis -> extent PrimExpr (1 where no loop binds it)

    def grid(self) -> tuple:
        return tuple(self.dims[f"blockIdx.{axis}"] for axis in "xyz")

    def block(self) -> tuple:
        return tuple(self.dims[f"threadIdx.{axis}"] for axis in "xyz")


@record(mutable=True)
class LaunchPlan:
    launches: list = field(default_factory=list)
    prelude: list = field(default_factory=list)  # LetStmt / AssertStmt wrappers, outermost first
    device_arrays: list = field(default_factory=list)  # constant-size top-level Allocates
    workspace: list = field(default_factory=list)  # (Allocate, offset PrimExpr int64), symbolic sizes
    workspace_bytes: tir.PrimExpr = field(default_factory=lambda: tir.IntImm("int64", 0))


def _int64(expr):
    return expr if expr.dtype == "int64" else tir.Cast("int64", expr)


def _aligned(expr):
    if isinstance(expr, tir.IntImm):
        return tir.IntImm("int64", -(-expr.value // WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT)
    align = tir.IntImm("int64", WORKSPACE_ALIGNMENT)
    return tir.Mul(tir.FloorDiv(tir.Add(expr, tir.IntImm("int64", WORKSPACE_ALIGNMENT - 1)), align), align)


def _add(a, b):
    if isinstance(a, tir.IntImm) and isinstance(b, tir.IntImm):
        return tir.IntImm("int64", a.value + b.value)
    if isinstance(a, tir.IntImm) and a.value == 0:
        return b
    return tir.Add(a, b)


def _bytes(stmt: tir.Allocate):
    size = tir.IntImm("int64", dt.itemsize(stmt.dtype))
    for extent in stmt.extents:
        if isinstance(extent, tir.IntImm) and isinstance(size, tir.IntImm):
            size = tir.IntImm("int64", size.value * extent.value)
        else:
            size = tir.Mul(size, _int64(extent))
    return size


def _dims(stmt: tir.Stmt, lets: dict, where: str) -> dict:
    dims: dict = {}

    def visit(node):
        if isinstance(node, tir.For) and node.kind == "thread_binding":
            if node.thread_tag not in GPU_AXES:
                raise UserError(f"codegen: cuda: {where}: thread binding '{node.thread_tag}' is not one of "
                                f"{', '.join(GPU_AXES)}")
            extent = substitute(node.extent, lets) if lets else node.extent
            if not isinstance(node.min, tir.IntImm) or node.min.value != 0:
                extent = tir.Add(extent, substitute(node.min, lets) if lets else node.min)
            old = dims.get(node.thread_tag)
            if old is None:
                dims[node.thread_tag] = extent
            elif isinstance(old, tir.IntImm) and isinstance(extent, tir.IntImm):
                dims[node.thread_tag] = old if old.value >= extent.value else extent
            elif not structural_equal(old, extent):
                dims[node.thread_tag] = tir.Max(_int64(old), _int64(extent))
        for name in ("body", "then_case", "else_case"):
            child = getattr(node, name, None)
            if isinstance(child, tir.Stmt):
                visit(child)
        for item in getattr(node, "seq", ()):
            visit(item)

    visit(stmt)
    return {axis: dims.get(axis, tir.IntImm("int64", 1)) for axis in GPU_AXES}


def plan_launches(func: tir.PrimFunc, where: str) -> LaunchPlan:
    """The launches of a lowered PrimFunc, in execution order."""
    plan = LaunchPlan()
    lets: dict = {}

    def visit(stmt, top: bool):
        if isinstance(stmt, tir.SeqStmt):
            for item in stmt.seq:
                visit(item, top)
        elif isinstance(stmt, tir.DeclBuffer):
            visit(stmt.body, top)
        elif isinstance(stmt, tir.AttrStmt) and stmt.attr_key not in ("thread_extent", "virtual_thread"):
            visit(stmt.body, top)
        elif isinstance(stmt, tir.Allocate) and stmt.scope not in ("shared", "shared.dyn", "local"):
            if all(isinstance(extent, tir.IntImm) for extent in stmt.extents):
                plan.device_arrays.append(stmt)
            else:
                plan.workspace.append((stmt, plan.workspace_bytes))
                plan.workspace_bytes = _add(plan.workspace_bytes, _aligned(_bytes(stmt)))
            visit(stmt.body, top)
        elif isinstance(stmt, tir.LetStmt) and not plan.launches:
            plan.prelude.append(stmt)
            lets[stmt.var] = substitute(stmt.value, lets) if lets else stmt.value
            visit(stmt.body, top)
        elif isinstance(stmt, tir.AssertStmt) and not plan.launches:
            plan.prelude.append(stmt)
            visit(stmt.body, top)
        elif isinstance(stmt, (tir.LetStmt, tir.AssertStmt)):
            raise UserError(f"codegen: cuda: {where}: a top-level {type(stmt).__name__} between launches "
                            "is not supported (each launch is its own __global__ function)")
        elif isinstance(stmt, tir.Evaluate) and isinstance(stmt.value, (tir.IntImm, tir.FloatImm)):
            return
        else:
            plan.launches.append(Launch(stmt, _dims(stmt, lets, where)))

    visit(func.body, True)
    return plan
