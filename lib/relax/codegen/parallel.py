"""Parallel loops: outlined into a worker, run in chunks on the process's thread pool.

For `for i in T.parallel(begin, end)` the kernel gets

    worker(begin, end, ctx, captured...)   the loop body over one range (pointers noalias
                                           when the kernel is)
    trampoline(closure, participant)       runs the participant's own block of chunks, then
                                           what is left of the others' blocks (one atomic
                                           claim counter per block in the closure)
    __relax_pool_launch(...)               left undefined: the loader provides it
                                           (runtime/kernels/thread_pool.py); it runs the
                                           trampoline on count-1 pool threads and on the
                                           calling thread, and returns when all are done

The iterations are cut into about CHUNKS_PER_THREAD chunks per thread, N chunks
in all; participant p of P (the calling thread is 0, the i-th pool worker started
is i, and only it, in every launch) owns chunks [p*N/P, (p+1)*N/P) and runs them first, so across
launches the same thread reads the same part of the data, which stays in its
core's cache (a gemv's weights, say). A participant whose block is done claims
chunks from the next participants' blocks, so a thread that starts late, or
shares its core with other work, takes fewer chunks instead of holding
everybody up. No
Python thread and no GIL is involved. The thread count is
min(ctx->num_threads, iterations, MAX_THREADS); with one thread the worker is
called directly. The first non-zero worker status is the loop's. Nested parallel
loops run serially inside their worker.

Too small to gain: a loop whose estimated work (iterations times work_per_iteration
of its body) is under SERIAL_WORK runs serially, decided here when the iteration
count is a constant (the loop is then an ordinary loop and the kernel is not
marked parallel) and at run time otherwise.

Objects built before the pool (kernel ABI 1 as first published) carry their own
launcher, `__relax_parallel_launch` (LAUNCHER_IR below, which starts and joins
pthreads per call); the loader still runs them as they are.
"""

from __future__ import annotations

import sys

import llvmlite.ir as ir

from ..ir import tir
from ..ir.node import Node
from ..llvm_capi import Context, Module, TargetMachine
from ..runtime.kernels import abi
from ..runtime.kernels.thread_pool import POOL_LAUNCH
from ..tir.rewrite import node_fields, walk
from .constant_fold import fold_or_build
from .llvm_types import I1, I8, I32, I64, POINTER, opaque

LAUNCHER = "__relax_parallel_launch"  # the per-object launcher of objects built before the pool

CHUNKS_PER_THREAD = 4

# Below this much estimated work (iterations x work_per_iteration, about one
# TIR node per unit) a parallel loop runs serially: a memory-bound elementwise loop
# gains nothing from a second thread, and a compute-bound one only above about this
# much work (bench/parallel_threshold.py measures it; figures in docs/kernel-abi.md).
SERIAL_WORK = 1 << 17

# The trip count assumed for an inner loop whose extent is not a constant.
UNKNOWN_EXTENT = 64

# The cost assumed for a call to an external function (T.call_extern): unknown,
# and a call is rarely put in a parallel loop unless it is heavy.
EXTERN_CALL_WORK = 4096

LAUNCHER_IR = f"""
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_join(i64, ptr)

define linkonce_odr hidden void @{LAUNCHER}(ptr %task, ptr %closure, i32 %count) {{
entry:
  %tids = alloca [{abi.MAX_THREADS} x i64], align 8
  %started = alloca [{abi.MAX_THREADS} x i8], align 1
  %n = sext i32 %count to i64
  br label %spawn_header
spawn_header:
  %t = phi i64 [1, %entry], [%t.next, %spawn_body]
  %spawn_more = icmp slt i64 %t, %n
  br i1 %spawn_more, label %spawn_body, label %run_here
spawn_body:
  %tid = getelementptr inbounds [{abi.MAX_THREADS} x i64], ptr %tids, i64 0, i64 %t
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr %task, ptr %closure)
  %ok = icmp eq i32 %rc, 0
  %flag = getelementptr inbounds [{abi.MAX_THREADS} x i8], ptr %started, i64 0, i64 %t
  %ok.byte = zext i1 %ok to i8
  store i8 %ok.byte, ptr %flag, align 1
  %t.next = add nsw i64 %t, 1
  br label %spawn_header
run_here:
  %here.result = call ptr %task(ptr %closure)
  br label %join_header
join_header:
  %j = phi i64 [1, %run_here], [%j.next, %join_latch]
  %join_more = icmp slt i64 %j, %n
  br i1 %join_more, label %join_check, label %done
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
done:
  ret void
}}
"""

# The closure every thread shares: status, begin, end, chunk size, one claim counter per
# participant (chunks of its block taken so far), ctx, participants, chunks, captured values...
_STATUS, _BEGIN, _END, _CHUNK, _NEXT, _CONTEXT, _THREADS, _CHUNKS = range(8)
_CAPTURED = 8
# The claim counters lie COUNTER_STRIDE words (64 bytes) apart, so no two share a cache
# line: each participant's claims on its own block then never move a line between cores.
COUNTER_STRIDE = 8
_COUNTERS = ir.ArrayType(I64, abi.MAX_THREADS * COUNTER_STRIDE)


def link_launcher(module: Module, context: Context, machine: TargetMachine) -> None:
    """Adds the old per-object launcher to a parsed module (of `context`, for `machine`)
    that declares it.

    The code generator no longer declares it (it calls the pool); kept for modules
    written against the first launcher, so they still link.
    """
    if module.declares(LAUNCHER):
        helper = Module.parse(LAUNCHER_IR, context)
        helper.set_triple(machine.triple)
        helper.set_data_layout(machine.data_layout)
        module.link_in(helper)


def referenced_keys(node, found: dict) -> dict:
    """Every Var and buffer-pointer key a statement refers to, in first-use order."""
    def record(value):
        if isinstance(value, tir.Var):
            found.setdefault(value, None)
        elif value.data is None:
            found.setdefault(("buffer", value.name), None)

    walk(node, record, (tir.Var, tir.Buffer))  # pre-order: first use first
    return found


def work_per_iteration(node, cap: int | None = None) -> int:
    """Estimated cost of one iteration of `node`: its TIR nodes, inner loops counted per trip.

    With `cap`, min(cost, cap): the walk stops once it has counted that much (the serial
    or parallel decision needs no more, and a tiled kernel's body has thousands of nodes)."""
    return _work(node, cap if cap is not None else sys.maxsize)


def _work(node, cap: int) -> int:
    if cap <= 0:
        return cap
    if isinstance(node, (tuple, list)):
        total = 0
        for item in node:
            total += _work(item, cap - total)
            if total >= cap:
                return cap
        return total
    if not isinstance(node, Node) or isinstance(node, tir.Buffer):
        return 0
    if isinstance(node, tir.For):
        trips = max(node.extent.value if isinstance(node.extent, tir.IntImm) else UNKNOWN_EXTENT, 0)
        if trips == 0:
            return 1
        # Counted up to the per-trip work that brings the loop to `cap`.
        return min(cap, 1 + trips * _work(node.body, -(-(cap - 1) // trips)))
    if isinstance(node, tir.Call) and node.op in ("tir.call_extern", "tir.call_packed"):
        return min(cap, EXTERN_CALL_WORK + _work(node.args, cap - EXTERN_CALL_WORK))
    total = 1
    for name in node_fields(node.__class__):
        total += _work(getattr(node, name), cap - total)
        if total >= cap:
            return cap
    return total


class ParallelCodegen:
    def emit_parallel_for(self, loop: tir.For, begin: ir.Value, end: ir.Value) -> None:
        cost = max(1, work_per_iteration(loop.body, cap=SERIAL_WORK))
        if isinstance(loop.extent, tir.IntImm):
            if loop.extent.value * cost < SERIAL_WORK:
                self._serial_loop(loop, begin, end)
                return
        keys = [k for k in referenced_keys(loop.body, {}) if k in self.vars and k is not loop.loop_var]
        captured = [self.vars[k] for k in keys]
        counts = self.module.__dict__.setdefault("_relax_parallel_count", {})
        index = counts[self.function.name] = counts.get(self.function.name, 0) + 1
        worker = self.outline_worker(loop, keys, captured, begin.type, f"{self.function.name}.parallel{index}")
        closure_type = ir.LiteralStructType([I32, I64, I64, I64, _COUNTERS, POINTER, I64, I64]
                                            + [v.type for v in captured])
        trampoline = self._trampoline(worker, closure_type, begin.type)
        self.parallel_used = True

        b = self.builder
        status_slot = self.entry_alloca(I32, "parallel_status")
        begin64, end64 = (b.sext(begin, I64), b.sext(end, I64)) if begin.type != I64 else (begin, end)
        total = fold_or_build(b, "sub", end64, begin64, signed=True)
        threads = b.sext(self.load_context("num_threads"), I64)
        threads = self._min(self._min(threads, total), ir.Constant(I64, abi.MAX_THREADS))
        small = b.icmp_signed("<", total, ir.Constant(I64, -(-SERIAL_WORK // cost)))
        one_thread = b.icmp_signed("<=", threads, ir.Constant(I64, 1))
        with b.if_else(b.or_(small, one_thread)) as (serial, threaded):
            with serial:
                b.store(b.call(worker, [begin, end, self.context] + captured), status_slot)
            with threaded:
                closure = self.entry_alloca(closure_type, "closure")
                pieces = b.mul(threads, ir.Constant(I64, CHUNKS_PER_THREAD))
                chunk = b.sdiv(b.sub(b.add(total, pieces), ir.Constant(I64, 1)), pieces)
                chunks = b.sdiv(b.sub(b.add(total, chunk), ir.Constant(I64, 1)), chunk)
                values = [ir.Constant(I32, 0), begin64, end64, chunk, None, self.context, threads, chunks] + captured
                for position, value in enumerate(values):
                    if value is not None:
                        b.store(value, self._field(b, closure, closure_type, position))
                # One memset, not a loop: LLVM vectorized a loop of strided stores, with
                # its run-time checks and epilogues, for a few dozen words.
                counters = self._field(b, closure, closure_type, _NEXT)
                memset = self.declare("llvm.memset.p0.i64",
                                      ir.FunctionType(ir.VoidType(), [POINTER, I8, I64, I1]))
                size = b.mul(threads, ir.Constant(I64, COUNTER_STRIDE * 8))
                b.call(memset, [counters, ir.Constant(I8, 0), size, ir.Constant(I1, 0)])
                launcher = self.declare(POOL_LAUNCH, ir.FunctionType(ir.VoidType(), [POINTER, POINTER, I32]))
                b.call(launcher, [trampoline, closure, b.trunc(threads, I32)])
                status = b.load(self._field(b, closure, closure_type, _STATUS), typ=I32)
                b.store(status, status_slot)
        status = b.load(status_slot, typ=I32)
        with b.if_then(b.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
            b.ret(status)

    def _serial_loop(self, loop: tir.For, begin: ir.Value, end: ir.Value) -> None:
        """The loop as an ordinary one: too little work to be worth a launch."""
        def body(index):
            self.vars[loop.loop_var] = index
            self.emit_stmt(loop.body)

        self.counted_loop(begin, end, body, name=loop.loop_var.name)

    @staticmethod
    def _counter(builder: ir.IRBuilder, counters: ir.Value, participant: ir.Value) -> ir.Value:
        slot = builder.mul(participant, ir.Constant(I64, COUNTER_STRIDE))
        return builder.gep(counters, [ir.Constant(I32, 0), slot], inbounds=True, source_etype=_COUNTERS)

    @staticmethod
    def _field(builder: ir.IRBuilder, closure: ir.Value, closure_type, position: int) -> ir.Value:
        return builder.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, position)], inbounds=True,
                           source_etype=closure_type)

    def _min(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.builder.select(self.builder.icmp_signed("<", a, b), a, b)

    def entry_alloca(self, llvm_type: ir.Type, name: str) -> ir.Value:
        with self.builder.goto_entry_block():
            self.builder.position_at_start(self.function.entry_basic_block)
            return opaque(self.builder.alloca(llvm_type, name=name))

    def outline_worker(self, loop: tir.For, keys, captured, index_type, name: str) -> ir.Function:
        arg_types = [index_type, index_type, POINTER] + [v.type for v in captured]
        function = ir.Function(self.module, ir.FunctionType(I32, arg_types), name)
        function.linkage = "internal"
        # Called from the serial path and from the thread routine: inlined, LLVM would optimize
        # and compile the loop body twice, for a call saved once per chunk.
        function.attributes.add("noinline")
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

    def _trampoline(self, worker: ir.Function, closure_type, index_type) -> ir.Function:
        """The thread routine of participant `index` (0: the calling thread; the i-th worker
        the pool started: i): run its own block of chunks, then take
        what is left of the others' blocks, until none is left or a worker fails.

        Participant p of P owns chunks [p*N/P, (p+1)*N/P) and claims them from its own
        counter in the closure, so across launches the same thread works on the same
        part of the data (which then stays in its core's cache); a participant whose own
        block is done claims from the next ones', so a late thread delays nobody. A
        participant index past P starts with participant index mod P's block.
        """
        function = ir.Function(self.module, ir.FunctionType(POINTER, [POINTER, I32]), worker.name + ".thread")
        function.linkage = "internal"
        # Built unoptimized: its loops only claim chunks, one step per call of the worker,
        # and LLVM's full pipeline on them cost more build time than it saves at run time.
        function.attributes.add("noinline")
        function.attributes.add("optnone")
        b = ir.IRBuilder(function.append_basic_block("entry"))
        closure, participant = function.args
        fields = {position: b.load(self._field(b, closure, closure_type, position), typ=field_type)
                  for position, field_type in enumerate(closure_type.elements) if position != _NEXT}
        begin, end, chunk, context = fields[_BEGIN], fields[_END], fields[_CHUNK], fields[_CONTEXT]
        threads, chunks = fields[_THREADS], fields[_CHUNKS]
        captured = [fields[position] for position in range(_CAPTURED, len(closure_type.elements))]
        counters = self._field(b, closure, closure_type, _NEXT)
        first = b.urem(b.zext(participant, I64), threads)
        entry = b.block
        owner = function.append_basic_block("owner")
        block = function.append_basic_block("block")
        take = function.append_basic_block("take")
        run = function.append_basic_block("run")
        next_owner = function.append_basic_block("next_owner")
        failed = function.append_basic_block("failed")
        done = function.append_basic_block("done")
        b.branch(owner)
        b.position_at_end(owner)
        q = b.phi(I64, name="owner")
        visited = b.phi(I64, name="visited")
        q.add_incoming(first, entry)
        visited.add_incoming(ir.Constant(I64, 0), entry)
        b.cbranch(b.icmp_signed("<", visited, threads), block, done)
        b.position_at_end(block)
        low = b.sdiv(b.mul(q, chunks), threads)
        high = b.sdiv(b.mul(b.add(q, ir.Constant(I64, 1)), chunks), threads)
        counter = self._counter(b, counters, q)
        b.branch(take)
        b.position_at_end(take)
        piece = b.add(low, b.atomic_rmw("add", counter, ir.Constant(I64, 1), "monotonic"))
        b.cbranch(b.icmp_signed("<", piece, high), run, next_owner)
        b.position_at_end(run)
        start = b.add(begin, b.mul(piece, chunk))
        stop = b.add(start, chunk)
        stop = b.select(b.icmp_signed("<", stop, end), stop, end)
        if index_type != I64:
            start, stop = b.trunc(start, index_type), b.trunc(stop, index_type)
        status = b.call(worker, [start, stop, context] + captured)
        b.cbranch(b.icmp_signed("==", status, ir.Constant(I32, 0)), take, failed)
        b.position_at_end(next_owner)
        following = b.add(q, ir.Constant(I64, 1))
        wrapped = b.select(b.icmp_signed("<", following, threads), following, ir.Constant(I64, 0))
        q.add_incoming(wrapped, next_owner)
        visited.add_incoming(b.add(visited, ir.Constant(I64, 1)), next_owner)
        b.branch(owner)
        b.position_at_end(failed)
        b.cmpxchg(self._field(b, closure, closure_type, _STATUS), ir.Constant(I32, 0), status, "monotonic", "monotonic")
        b.branch(done)
        b.position_at_end(done)
        b.ret(ir.Constant(POINTER, None))
        return function
