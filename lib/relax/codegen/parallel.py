"""Parallel loops: outlined into a worker function and run in chunks on POSIX threads.

For `for i in T.parallel(begin, end)` the kernel gets

    worker(begin, end, ctx, captured...)   the loop body over one chunk (pointers noalias
                                           when the kernel is)
    trampoline(closure)                    a pthread start routine unpacking a closure
    __relax_parallel_launch(...)           spawns count-1 threads, runs chunk 0 itself,
                                           joins them and returns the first non-zero status

The kernel calls pthread_create/pthread_join itself (resolved in the loading
process), so no Python thread and no GIL is involved. The thread count is
min(ctx->num_threads, iterations, MAX_THREADS); with one thread the worker is
called directly. A thread that cannot be started has its chunk run inline.
Nested parallel loops run serially inside their worker.
"""

from __future__ import annotations

import dataclasses

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ..ir import tir
from ..ir.node import Node
from ..runtime.kernels import abi
from .llvm_types import I32, I64, POINTER, opaque

LAUNCHER = "__relax_parallel_launch"

LAUNCHER_IR = f"""
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_join(i64, ptr)

define linkonce_odr hidden i32 @{LAUNCHER}(ptr %task, ptr %closures, i64 %stride, i32 %count) {{
entry:
  %tids = alloca [{abi.MAX_THREADS} x i64], align 8
  %started = alloca [{abi.MAX_THREADS} x i8], align 1
  %n = sext i32 %count to i64
  br label %spawn_header
spawn_header:
  %t = phi i64 [1, %entry], [%t.next, %spawn_latch]
  %spawn_more = icmp slt i64 %t, %n
  br i1 %spawn_more, label %spawn_body, label %run_first
spawn_body:
  %offset = mul i64 %t, %stride
  %closure = getelementptr inbounds i8, ptr %closures, i64 %offset
  %tid = getelementptr inbounds [{abi.MAX_THREADS} x i64], ptr %tids, i64 0, i64 %t
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr %task, ptr %closure)
  %ok = icmp eq i32 %rc, 0
  %flag = getelementptr inbounds [{abi.MAX_THREADS} x i8], ptr %started, i64 0, i64 %t
  %ok.byte = zext i1 %ok to i8
  store i8 %ok.byte, ptr %flag, align 1
  br i1 %ok, label %spawn_latch, label %spawn_inline
spawn_inline:
  %inline.result = call ptr %task(ptr %closure)
  br label %spawn_latch
spawn_latch:
  %t.next = add nsw i64 %t, 1
  br label %spawn_header
run_first:
  %first.result = call ptr %task(ptr %closures)
  br label %join_header
join_header:
  %j = phi i64 [1, %run_first], [%j.next, %join_latch]
  %join_more = icmp slt i64 %j, %n
  br i1 %join_more, label %join_check, label %status_header
join_check:
  %jflag = getelementptr inbounds [{abi.MAX_THREADS} x i8], ptr %started, i64 0, i64 %j
  %was.started = load i8, ptr %jflag, align 1
  %joinable = icmp ne i8 %was.started, 0
  br i1 %joinable, label %join_body, label %join_latch
join_body:
  %jtid = getelementptr inbounds [{abi.MAX_THREADS} x i64], ptr %tids, i64 0, i64 %j
  %thread = load i64, ptr %jtid, align 8
  %join.rc = call i32 @pthread_join(i64 %thread, ptr null)
  br label %join_latch
join_latch:
  %j.next = add nsw i64 %j, 1
  br label %join_header
status_header:
  %s = phi i64 [0, %join_header], [%s.next, %status_body]
  %status = phi i32 [0, %join_header], [%status.next, %status_body]
  %status_more = icmp slt i64 %s, %n
  br i1 %status_more, label %status_body, label %done
status_body:
  %soffset = mul i64 %s, %stride
  %sclosure = getelementptr inbounds i8, ptr %closures, i64 %soffset
  %chunk.status = load i32, ptr %sclosure, align 4
  %keep = icmp ne i32 %status, 0
  %status.next = select i1 %keep, i32 %status, i32 %chunk.status
  %s.next = add nsw i64 %s, 1
  br label %status_header
done:
  ret i32 %status
}}
"""


def link_launcher(module: "llvm.ModuleRef") -> None:
    """Adds the launcher's definition to a parsed module that declares it."""
    if module.get_function(LAUNCHER).is_declaration:
        helper = llvm.parse_assembly(LAUNCHER_IR)
        helper.triple = module.triple
        helper.data_layout = module.data_layout
        module.link_in(helper)


def referenced_keys(node, found: dict, stores_only: bool = False) -> dict:
    """Every Var and buffer-pointer key a statement refers to, in first-use order.

    With `stores_only`, only the pointer keys of buffers that BufferStores write.
    """
    seen: set[int] = set()

    def walk(value):
        if isinstance(value, (tuple, list)):
            for item in value:
                walk(item)
            return
        if not isinstance(value, Node) or id(value) in seen:
            return
        seen.add(id(value))
        if stores_only:
            if isinstance(value, tir.BufferStore):
                buffer = value.buffer
                found.setdefault(buffer.data if buffer.data is not None else ("buffer", buffer.name), None)
        elif isinstance(value, tir.Var):
            found.setdefault(value, None)
        if not stores_only and isinstance(value, tir.Buffer) and value.data is None:
            found.setdefault(("buffer", value.name), None)
        for field in dataclasses.fields(value):
            if field.name != "span":
                walk(getattr(value, field.name))

    walk(node)
    return found


class ParallelCodegen:
    def emit_parallel_for(self, loop: tir.For, begin: ir.Value, end: ir.Value) -> None:
        keys = [k for k in referenced_keys(loop.body, {}) if k in self.vars and k is not loop.loop_var]
        captured = [self.vars[k] for k in keys]
        counts = self.module.__dict__.setdefault("_relax_parallel_count", {})
        index = counts[self.function.name] = counts.get(self.function.name, 0) + 1
        worker = self.outline_worker(loop, keys, captured, begin.type, f"{self.function.name}.parallel{index}")
        closure_type = ir.LiteralStructType([I32, begin.type, begin.type, POINTER] + [v.type for v in captured])
        trampoline = self._trampoline(worker, closure_type)
        self.parallel_used = True

        status_slot = self.entry_alloca(I32, "parallel_status")
        total = self.builder.sext(self.builder.sub(end, begin), I64) if begin.type != I64 else self.builder.sub(end, begin)
        threads = self.builder.sext(self.load_context("num_threads"), I64)
        threads = self._min(self._min(threads, total), ir.Constant(I64, abi.MAX_THREADS))
        with self.builder.if_else(self.builder.icmp_signed("<=", threads, ir.Constant(I64, 1))) as (serial, threaded):
            with serial:
                status = self.builder.call(worker, [begin, end, self.context] + captured)
                self.builder.store(status, status_slot)
            with threaded:
                self._launch(trampoline, closure_type, begin, end, total, threads, captured, status_slot)
        status = self.builder.load(status_slot, typ=I32)
        with self.builder.if_then(self.builder.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
            self.builder.ret(status)

    def _min(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.builder.select(self.builder.icmp_signed("<", a, b), a, b)

    def _launch(self, trampoline, closure_type, begin, end, total, threads, captured, status_slot):
        b = self.builder
        one = ir.Constant(I64, 1)
        chunk = b.sdiv(b.sub(b.add(total, threads), one), threads)
        count = b.sdiv(b.sub(b.add(total, chunk), one), chunk)
        closures = self.entry_alloca(ir.ArrayType(closure_type, abi.MAX_THREADS), "closures")

        def fill(t):
            slot = b.gep(closures, [ir.Constant(I64, 0), t], inbounds=True,
                         source_etype=ir.ArrayType(closure_type, abi.MAX_THREADS))
            start = b.mul(t, chunk)
            stop = self._min(b.add(start, chunk), total)
            if begin.type != I64:
                start, stop = b.trunc(start, begin.type), b.trunc(stop, begin.type)
            values = [ir.Constant(I32, 0), b.add(begin, start), b.add(begin, stop), self.context] + captured
            for position, value in enumerate(values):
                field = b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, position)], inbounds=True,
                              source_etype=closure_type)
                b.store(value, field)

        self.counted_loop(ir.Constant(I64, 0), count, fill, name="chunk")
        stride = b.ptrtoint(b.gep(ir.Constant(POINTER, None), [ir.Constant(I64, 1)], source_etype=closure_type), I64)
        launcher = self.declare(LAUNCHER, ir.FunctionType(I32, [POINTER, POINTER, I64, I32]))
        status = b.call(launcher, [trampoline, closures, stride, b.trunc(count, I32)])
        b.store(status, status_slot)

    def entry_alloca(self, llvm_type: ir.Type, name: str) -> ir.Value:
        with self.builder.goto_entry_block():
            self.builder.position_at_start(self.function.entry_basic_block)
            return opaque(self.builder.alloca(llvm_type, name=name))

    def outline_worker(self, loop: tir.For, keys, captured, index_type, name: str) -> ir.Function:
        arg_types = [index_type, index_type, POINTER] + [v.type for v in captured]
        function = ir.Function(self.module, ir.FunctionType(I32, arg_types), name)
        function.linkage = "internal"
        for argument, value in zip(function.args[3:], captured):
            if self.noalias and isinstance(value.type, ir.PointerType):
                argument.add_attribute("noalias")
        child = self.child(function, function.args[2])
        child.vars.update(zip(keys, function.args[3:]))

        def body(index):
            child.vars[loop.loop_var] = index
            child.emit_stmt(loop.body)

        child.counted_loop(function.args[0], function.args[1], body, name=loop.loop_var.name)
        if not child.builder.block.is_terminated:
            child.builder.ret(ir.Constant(I32, 0))
        return function

    def _trampoline(self, worker: ir.Function, closure_type) -> ir.Function:
        function = ir.Function(self.module, ir.FunctionType(POINTER, [POINTER]), worker.name + ".thread")
        function.linkage = "internal"
        builder = ir.IRBuilder(function.append_basic_block("entry"))
        closure = function.args[0]
        fields = []
        for position, field_type in enumerate(closure_type.elements):
            pointer = builder.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, position)], inbounds=True,
                                  source_etype=closure_type)
            fields.append(builder.load(pointer, typ=field_type))
        status = builder.call(worker, fields[1:])
        builder.store(status, builder.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, 0)], inbounds=True,
                                          source_etype=closure_type))
        builder.ret(ir.Constant(POINTER, None))
        return function
