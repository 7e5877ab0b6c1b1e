"""Lowered TIR statements inside one launch as CUDA C lines (a mixin of the kernel printer).

A `thread_binding` loop is its GPU index: the loop variable is declared from
blockIdx/threadIdx (plus the loop's min), and guarded when this loop's extent is
not the launch dimension (a launch takes the largest extent of each axis).
Serial, unrolled and vectorized loops are C for-loops (the last two with
`#pragma unroll`: the code generator does not emit vector types, NVCC unrolls);
a `parallel` loop inside a kernel runs serially in each thread. Allocations are
`__shared__` arrays (scope "shared") or per-thread arrays (any other scope)
and need a constant size. tvm_storage_sync and the warp shuffles are
expressions (expr.py). A failed AssertStmt prints its message and traps.
"""

from __future__ import annotations

from ...ir import tir
from ...ir.structural import structural_equal
from .c_types import c_type

GPU_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


def constant_extent(extents) -> int | None:
    """The product of constant extents, None when one is symbolic."""
    total = 1
    for extent in extents:
        if not isinstance(extent, tir.IntImm):
            return None
        total *= extent.value
    return total


class CudaStmtPrinter:
    """Needs from its host class: the expression printer, lines, indent, launch_dims."""

    lines: list
    indent: int
    launch_dims: dict

    def line(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def block(self, stmt: tir.Stmt) -> None:
        self.indent += 1
        self.stmt(stmt)
        self.indent -= 1

    def stmt(self, stmt: tir.Stmt) -> None:
        method = getattr(self, "stmt_" + type(stmt).__name__, None)
        if method is None:
            raise self.error(f"cannot generate CUDA code for {type(stmt).__name__}; "
                             "kernels must be lowered (relax.tir.pipeline.lower_for_codegen) first")
        method(stmt)

    def stmt_SeqStmt(self, stmt):
        for item in stmt.seq:
            self.stmt(item)

    def stmt_Evaluate(self, stmt):
        if isinstance(stmt.value, (tir.IntImm, tir.FloatImm)):
            return
        self.line(f"{self.expr(stmt.value)};")

    def stmt_BufferStore(self, stmt):
        if len(stmt.indices) != 1:
            raise self.error(f"buffer '{stmt.buffer.name}' is written with {len(stmt.indices)} indices; "
                             "kernels must be lowered (flattened to 1-D) first")
        value = self.expr(stmt.value)
        if stmt.value.dtype != stmt.buffer.dtype:
            value = self.cast(value, stmt.value.dtype, stmt.buffer.dtype)
        self.line(f"{self.buffer_name(stmt.buffer)}[{self.expr(stmt.indices[0])}] = {value};")

    def stmt_LetStmt(self, stmt):
        value = self.expr(stmt.value)
        name = self.bind_var(stmt.var)
        self.line(f"const {c_type(stmt.var.dtype, f'variable {stmt.var.name}')} {name} = {value};")
        self.stmt(stmt.body)

    def stmt_AttrStmt(self, stmt):
        if stmt.attr_key in ("thread_extent", "virtual_thread"):
            raise self.error(f"attribute '{stmt.attr_key}' should have been lowered to a thread_binding loop")
        self.stmt(stmt.body)

    def stmt_DeclBuffer(self, stmt):
        if stmt.buffer.data is not None and not self.has_var(stmt.buffer.data):
            raise self.error(f"buffer '{stmt.buffer.name}' is declared over an unallocated handle")
        self.stmt(stmt.body)

    def stmt_IfThenElse(self, stmt):
        self.line(f"if ({self.expr(stmt.condition)}) {{")
        self.block(stmt.then_case)
        if stmt.else_case is not None:
            self.line("} else {")
            self.block(stmt.else_case)
        self.line("}")

    def stmt_While(self, stmt):
        self.line(f"while ({self.expr(stmt.condition)}) {{")
        self.block(stmt.body)
        self.line("}")

    def stmt_AssertStmt(self, stmt):
        message = stmt.message.value if isinstance(stmt.message, tir.StringImm) else "assertion failed"
        text = f"{self.kernel_name}: {message}".replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
        self.line(f"if (!({self.expr(stmt.condition)})) {{")
        self.line(f'  printf("{text}\\n");')
        self.line("  __trap();")
        self.line("}")
        self.stmt(stmt.body)

    def stmt_Allocate(self, stmt):
        count = constant_extent(stmt.extents)
        if count is None:
            raise self.error(f"allocation '{stmt.buffer_var.name}' inside a launch has a symbolic size; "
                             "GPU kernels allocate constant-size shared or per-thread arrays")
        ctype = c_type(stmt.dtype, f"allocation {stmt.buffer_var.name}")
        name = self.bind_var(stmt.buffer_var, stmt.dtype)
        # 16-byte aligned shared arrays: NVVM may then merge a thread's adjacent loads into one
        # 128-bit load (the matmul rule's contiguous register tiles); it cannot prove it otherwise.
        if stmt.scope in ("shared", "shared.dyn"):
            prefix = "__shared__ __align__(16) "
        else:  # float16 arrays may be read as pairs (tir.ptx_mma's fragments)
            prefix = "__align__(16) " if stmt.dtype == "float16" else ""
        self.line(f"{prefix}{ctype} {name}[{max(count, 1)}];")
        self.stmt(stmt.body)

    # -- loops ---------------------------------------------------------------------

    def stmt_For(self, loop: tir.For):
        if loop.kind == "thread_binding":
            self._thread_loop(loop)
            return
        ctype = c_type(loop.loop_var.dtype, f"loop variable {loop.loop_var.name}")
        begin = self.expr(loop.min)
        end = self.expr(loop.extent) if _is_zero(loop.min) else f"({begin} + {self.expr(loop.extent)})"
        name = self.bind_var(loop.loop_var)
        if loop.kind in ("unrolled", "vectorized"):
            self.line("#pragma unroll")
        self.line(f"for ({ctype} {name} = {begin}, {name}_end = {end}; {name} < {name}_end; ++{name}) {{")
        self.block(loop.body)
        self.line("}")

    def _thread_loop(self, loop: tir.For):
        tag = loop.thread_tag
        if tag not in GPU_AXES:
            raise self.error(f"thread binding '{tag}' is not one of {', '.join(GPU_AXES)}")
        ctype = c_type(loop.loop_var.dtype, f"loop variable {loop.loop_var.name}")
        name = self.bind_var(loop.loop_var)
        index = f"(({ctype}){tag})"
        if not _is_zero(loop.min):
            index = f"({index} + {self.expr(loop.min)})"
        self.line(f"const {ctype} {name} = {index};")
        if _same_extent(loop.extent, self.launch_dims[tag]):
            self.stmt(loop.body)
            return
        self.line(f"if ((({ctype}){tag}) < {self.expr(loop.extent)}) {{")
        self.block(loop.body)
        self.line("}")


def _is_zero(expr) -> bool:
    return isinstance(expr, tir.IntImm) and expr.value == 0


def _same_extent(a, b) -> bool:
    if isinstance(a, tir.IntImm) and isinstance(b, tir.IntImm):
        return a.value == b.value
    return structural_equal(a, b, map_free_vars=False)

