"""Lowered TIR statements to LLVM control flow (a mixin of FunctionCodegen).

Loops become a header with a phi, a body and a latch; `parallel` loops are handed
to parallel.py (outlined and run on threads), other kinds are serial loops that
LLVM's loop vectorizer and unroller then transform. Allocate puts constant-size
buffers on the stack (one alloca in the entry block) or carves them out of the
caller's workspace; a workspace allocation inside a parallel loop is malloc'ed
by each thread instead (the threads cannot share one region). A failed AssertStmt stores its message in the context and
returns ASSERTION_FAILED.
"""

from __future__ import annotations

import llvmlite.ir as ir

from ..ir import dtype as dt
from ..ir import tir
from ..runtime.kernels import abi
from .constant_fold import fold_or_build
from .loop_hints import LOOP_HINTS, loop_hint
from .nontemporal import NONTEMPORAL
from .llvm_types import I32, I64, POINTER, memory_type, opaque

# Constant-size allocations without a storage annotation go on the stack up to this size.
STACK_LIMIT_BYTES = 1 << 16


class StmtCodegen:
    def emit_stmt(self, stmt: tir.Stmt) -> None:
        if self.builder.block.is_terminated:
            return
        method = getattr(self, "stmt_" + type(stmt).__name__, None)
        if method is None:
            raise self.error(f"cannot generate code for {type(stmt).__name__}; "
                             "kernels must be lowered (relax.tir.pipeline.lower_for_codegen) first")
        method(stmt)

    def stmt_SeqStmt(self, stmt):
        for item in stmt.seq:
            self.emit_stmt(item)

    def stmt_Evaluate(self, stmt):
        if not isinstance(stmt.value, (tir.IntImm, tir.FloatImm)):
            self.emit(stmt.value)

    def stmt_BufferStore(self, stmt):
        index = self._single_index(stmt.buffer, stmt.indices)
        self.store(stmt.buffer, index, self.emit(stmt.value))

    def stmt_LetStmt(self, stmt):
        self.vars[stmt.var] = self.emit(stmt.value)
        self.emit_stmt(stmt.body)

    def stmt_AttrStmt(self, stmt):
        if stmt.attr_key in ("thread_extent", "virtual_thread"):
            thread = getattr(getattr(stmt.node, "var", None), "name", "?")
            raise self.error(f"binds the GPU thread axis '{thread}', which CPU targets do not have; "
                             "build it for a cuda target")
        self.emit_stmt(stmt.body)

    def stmt_DeclBuffer(self, stmt):
        if stmt.buffer.data is not None and stmt.buffer.data not in self.vars:
            raise self.error(f"buffer '{stmt.buffer.name}' is declared over an unallocated handle")
        self.emit_stmt(stmt.body)

    def stmt_IfThenElse(self, stmt):
        condition = self.as_bool(self.emit(stmt.condition))
        if stmt.else_case is None:
            with self.builder.if_then(condition):
                self.emit_stmt(stmt.then_case)
            return
        with self.builder.if_else(condition) as (then, otherwise):
            with then:
                self.emit_stmt(stmt.then_case)
            with otherwise:
                self.emit_stmt(stmt.else_case)

    def stmt_While(self, stmt):
        header = self.builder.append_basic_block("while_header")
        body = self.builder.append_basic_block("while_body")
        done = self.builder.append_basic_block("while_done")
        self.builder.branch(header)
        self.builder.position_at_end(header)
        self.builder.cbranch(self.as_bool(self.emit(stmt.condition)), body, done)
        self.builder.position_at_end(body)
        self.emit_stmt(stmt.body)
        if not self.builder.block.is_terminated:
            self.builder.branch(header)
        self.builder.position_at_end(done)

    def stmt_AssertStmt(self, stmt):
        condition = self.as_bool(self.emit(stmt.condition))
        message = stmt.message.value if isinstance(stmt.message, tir.StringImm) else "assertion failed"
        with self.builder.if_then(self.builder.not_(condition), likely=False):
            self.fail(abi.ASSERTION_FAILED, f"{self.kernel_name}: {message}")
        self.emit_stmt(stmt.body)

    def fail(self, code: int, message: str) -> None:
        """Stores `message` in the context and returns `code` from the current function."""
        self.store_context("error_message", self.string_constant(message))
        self.store_context("error_code", ir.Constant(I32, code))
        self.builder.ret(ir.Constant(I32, code))

    def context_field(self, name: str) -> ir.Value:
        return self.builder.gep(self.context, [ir.Constant(I32, 0), ir.Constant(I32, abi.CONTEXT_FIELD[name])],
                                inbounds=True, source_etype=self.context_type)

    def store_context(self, name: str, value: ir.Value) -> None:
        self.builder.store(value, self.context_field(name))

    def load_context(self, name: str) -> ir.Value:
        field_type = self.context_type.elements[abi.CONTEXT_FIELD[name]]
        return self.builder.load(self.context_field(name), typ=field_type)

    # -- loops ---------------------------------------------------------------------

    def stmt_For(self, loop: tir.For):
        if loop.kind == "thread_binding":
            raise self.error(f"loop over '{loop.loop_var.name}' is bound to '{loop.thread_tag}', "
                             "which CPU targets do not have")
        if self.streaming is None and loop.kind == "serial" and NONTEMPORAL in loop.annotations:
            if self.emit_streaming_for(loop):  # nontemporal.py
                return
        begin = self.emit(loop.min)
        extent = self.emit(loop.extent)
        begin = self.cast(begin, loop.min.dtype, loop.loop_var.dtype)
        extent = self.cast(extent, loop.extent.dtype, loop.loop_var.dtype)
        end = fold_or_build(self.builder, "add", begin, extent, signed=False)
        if loop.kind == "parallel" and not self.in_parallel:
            self.emit_parallel_for(loop, begin, end)
            return

        def body(index):
            self.vars[loop.loop_var] = index
            self.emit_stmt(loop.body)

        kind = "rolled" if id(loop) in self.rolled_loops else loop.kind  # unroll_policy.py
        hoisted = self.hoist_bases(loop) if kind == "unrolled" else ()  # hoisted_bases.py
        self.counted_loop(begin, end, body, signed=dt.kind(loop.loop_var.dtype) == "int",
                          name=loop.loop_var.name, kind=kind)
        for key in hoisted:
            del self.hoisted[key]

    def counted_loop(self, begin: ir.Value, end: ir.Value, body, signed: bool = True, name: str = "i",
                     kind: str = "serial") -> None:
        """for (i = begin; i < end; ++i) body(i), with `body` emitting into the builder.

        `vectorized`, `unrolled` and `rolled` loops carry LLVM loop metadata asking for that
        (loop_hints.py); other loops are left to LLVM's own judgement.
        """
        preheader = self.builder.block
        header = self.builder.append_basic_block(f"for_{name}_header")
        body_block = self.builder.append_basic_block(f"for_{name}_body")
        done = self.builder.append_basic_block(f"for_{name}_done")
        self.builder.branch(header)
        self.builder.position_at_end(header)
        index = self.builder.phi(begin.type, name=name)
        index.add_incoming(begin, preheader)
        compare = self.builder.icmp_signed if signed else self.builder.icmp_unsigned
        self.builder.cbranch(compare("<", index, end), body_block, done)
        self.builder.position_at_end(body_block)
        body(index)
        if not self.builder.block.is_terminated:
            step = self.builder.add(index, ir.Constant(index.type, 1))
            if signed:
                step.flags.append("nsw")
            index.add_incoming(step, self.builder.block)
            back_edge = self.builder.branch(header)
            if kind in LOOP_HINTS:
                back_edge.set_metadata("llvm.loop", loop_hint(self.module, kind))
        self.builder.position_at_end(done)

    # -- memory --------------------------------------------------------------------

    def stmt_Allocate(self, stmt: tir.Allocate):
        element_type = memory_type(stmt.dtype)
        storage = self.storage_of(stmt)
        if storage == "stack":
            count = 1
            for extent in stmt.extents:
                count *= extent.value
            with self.builder.goto_entry_block():
                self.builder.position_at_start(self.function.entry_basic_block)
                pointer = self.builder.alloca(element_type, size=ir.Constant(I64, count),
                                              name=stmt.buffer_var.name)
                pointer.align = 64
                opaque(pointer)
        elif stmt in self.workspace_offsets:
            offset = self.workspace_offsets[stmt]
            base = self.load_context("workspace")
            pointer = self.builder.gep(base, [self.cast(self.emit(offset), offset.dtype, "int64")],
                                       inbounds=True, source_etype=ir.IntType(8))
        else:
            self._heap_allocate(stmt)
            return
        self.vars[stmt.buffer_var] = pointer
        self.emit_stmt(stmt.body)

    def _heap_allocate(self, stmt: tir.Allocate) -> None:
        """A workspace allocation inside a parallel loop: each thread mallocs its own, freed after the body."""
        count = ir.Constant(I64, dt.itemsize(stmt.dtype))
        for extent in stmt.extents:
            count = self.builder.mul(count, self.cast(self.emit(extent), extent.dtype, "int64"))
        malloc = self.declare("malloc", ir.FunctionType(POINTER, [I64]))
        pointer = self.builder.call(malloc, [count])
        failed = self.builder.icmp_unsigned("==", self.builder.ptrtoint(pointer, I64), ir.Constant(I64, 0))
        with self.builder.if_then(failed, likely=False):
            self.fail(abi.OUT_OF_MEMORY, f"{self.kernel_name}: cannot allocate '{stmt.buffer_var.name}'")
        self.vars[stmt.buffer_var] = pointer
        self.emit_stmt(stmt.body)
        if not self.builder.block.is_terminated:
            self.builder.call(self.declare("free", ir.FunctionType(ir.VoidType(), [POINTER])), [pointer])

    def storage_of(self, stmt: tir.Allocate) -> str:
        """"stack" or "workspace": the annotation if any, else by size."""
        wanted = stmt.annotations.get("storage") if stmt.annotations else None
        constant_size = all(isinstance(e, tir.IntImm) for e in stmt.extents)
        if wanted == "stack" and not constant_size:
            raise self.error(f"stack allocation '{stmt.buffer_var.name}' needs a constant size")
        if wanted in ("stack", "workspace"):
            return wanted
        if constant_size:
            count = 1
            for extent in stmt.extents:
                count *= extent.value
            if count * dt.itemsize(stmt.dtype) <= STACK_LIMIT_BYTES:
                return "stack"
        return "workspace"


