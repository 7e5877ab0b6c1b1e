"""A GPU thread simulator for TIR: runs a function with thread_binding loops on numpy arrays.

    simulate(prim_func, a, b, c)      # numpy arrays for buffer parameters, written in place

The reference interpreter (interpreter.py) runs threads one after another, which is
exact only for kernels without barriers or warp shuffles. Here each launch (a nest of
thread_binding loops, blockIdx.* and threadIdx.*, directly inside one another) runs
block by block, and the threads of a block run in lockstep: each statement runs once
for all of them, its values numpy arrays with an element per thread (a value all
threads share stays a scalar). An active mask says which threads a statement runs
for; a condition, a loop whose trip count depends on the thread and
`tir.if_then_else` narrow it, and loads and stores touch only the addresses of the
active threads. Every thread has its own variables and `local` allocations (a row
per thread) and shares the function's buffers and the block's `shared` allocations.
Collectives:

- `tir.tvm_storage_sync("shared")` (__syncthreads) must be reached by every thread of
  the block together; reached under a condition that leaves threads out, it is a
  SimulatorError (CUDA leaves that undefined, and TIR has no early exit);
- `tir.tvm_warp_shuffle_down` / `tir.tvm_warp_shuffle` exchange a value among the
  active lanes of each warp (32 consecutive threads, x fastest), as __shfl_*_sync
  with __activemask() do; a lane reading a lane that is not at the shuffle (past
  the last thread of the block, or left out by a condition) is a SimulatorError;
- `tir.ptx_mma` (m16n8k16, float16) multiplies each warp's fragments, read from its
  lanes' local arrays in PTX's layout; every lane of every warp must be there.
  Both live in gpu_warp_collectives.py.

Shared memory is checked for races in a way no execution order can hide: between
two barriers (an epoch) every element of a `shared` allocation remembers the thread
that wrote it and the threads that read it. A thread reading what another thread
wrote in the same epoch, or writing what another thread read or wrote, is a
SimulatorError.

Vector values (lanes > 1; CUDA kernels here have none) and schedulable blocks inside
a launch are refused. An error inside the block (an access out of bounds, a failed
assertion) is a SimulatorError naming the block.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtype as dt
from ..ir import tir
from . import semantics
from . import gpu_warp_collectives as warp_collectives
from .interpreter import Interpreter, InterpreterError

SHUFFLES = ("tir.tvm_warp_shuffle_down", "tir.tvm_warp_shuffle")
_INDEX = {"x": 0, "y": 1, "z": 2}


class SimulatorError(InterpreterError):
    """The kernel deadlocked, raced, or has a launch shape or construct the simulator rejects."""


class _Shared:
    """A `shared` allocation of a block, and who wrote and read each element in this epoch."""

    def __init__(self, memory: np.ndarray):
        self.memory = memory
        self.writer = np.full(memory.size, -1)  # the thread that wrote the element, -1 for none
        self.reader = np.full(memory.size, -1)  # a thread that read it
        self.other_reader = np.full(memory.size, -1)  # a thread that read it, not `reader`

    def new_epoch(self) -> None:
        for record in (self.writer, self.reader, self.other_reader):
            record.fill(-1)

    def read(self, name: str, offsets, threads) -> None:
        _check(name, offsets, threads, self.writer[offsets], "reads", "wrote")
        first = self.reader[offsets] < 0
        self.reader[offsets[first]] = threads[first]
        another = self.reader[offsets] != threads
        self.other_reader[offsets[another]] = threads[another]

    def write(self, name: str, offsets, threads) -> None:
        if len(np.unique(offsets)) < len(offsets):  # threads of this one statement write one element
            earlier = {}
            for offset, thread in zip(offsets.tolist(), threads.tolist()):
                _check(name, [offset], [thread], [earlier.get(offset, -1)], "writes", "wrote")
                earlier[offset] = thread
        _check(name, offsets, threads, self.writer[offsets], "writes", "wrote")
        reader = self.reader[offsets]
        _check(name, offsets, threads, np.where(reader != threads, reader, self.other_reader[offsets]),
               "writes", "read")
        self.writer[offsets] = threads
        self.reader[offsets] = -1
        self.other_reader[offsets] = -1


def _check(name: str, offsets, threads, others, access: str, earlier: str) -> None:
    """Raises for the first of `threads` whose element another thread (`others`, -1 for none) touched."""
    others, threads = np.asarray(others), np.asarray(threads)
    racing = (others >= 0) & (others != threads)
    if racing.any():
        i = int(np.argmax(racing))
        raise SimulatorError(f"race on shared '{name}'[{offsets[i]}]: thread {threads[i]} {access} what "
                             f"thread {others[i]} {earlier} with no barrier between")


class _BlockInterpreter(Interpreter):
    """The threads of one GPU block in lockstep, for the threads of `self.mask`."""

    def __init__(self, outer: Interpreter, count: int):
        super().__init__()
        self.env = dict(outer.env)
        self.storage = dict(outer.storage)
        self.count = count
        self.shared: dict = {}  # buffer variable -> _Shared
        self._activate(np.ones(count, dtype=bool))

    # -- the active mask ------------------------------------------------------------------
    def _activate(self, mask) -> None:
        self.mask = np.broadcast_to(mask, (self.count,))
        self.active = np.flatnonzero(self.mask)  # the linear ids of the active threads
        self.converged = len(self.active) == self.count

    def _narrow(self, condition) -> tuple:
        """Leaves active only the active threads where `condition` holds; returns the state to restore."""
        before = self.mask, self.active, self.converged
        self._activate(self.mask & _truth(condition))
        return before

    def _restore(self, before: tuple) -> None:
        self.mask, self.active, self.converged = before

    def _exec_where(self, condition, stmt) -> None:
        """Executes `stmt` for the active threads where `condition` holds, if there are any."""
        before = self._narrow(condition)
        try:
            if len(self.active):
                self.exec(stmt)
        finally:
            self._restore(before)

    # -- statements -----------------------------------------------------------------------
    def exec_IfThenElse(self, stmt):
        condition = self.eval(stmt.condition)
        if not isinstance(condition, np.ndarray):
            branch = stmt.then_case if condition else stmt.else_case
            if branch is not None:
                self.exec(branch)
            return
        condition = _truth(condition)
        self._exec_where(condition, stmt.then_case)
        if stmt.else_case is not None:
            self._exec_where(~condition, stmt.else_case)

    def exec_For(self, loop):
        if loop.kind == "thread_binding":
            raise SimulatorError(f"a thread_binding loop ({loop.thread_tag}) inside another statement of a launch")
        start, extent = self.eval(loop.min), self.eval(loop.extent)
        if not isinstance(start, np.ndarray) and not isinstance(extent, np.ndarray):
            for value in range(start, start + extent):
                self.env[loop.loop_var] = semantics.wrap(value, loop.loop_var.dtype)
                self.exec(loop.body)
            return
        end = np.broadcast_to(start + extent, (self.count,))
        start = np.broadcast_to(start, (self.count,))
        for value in range(int(start[self.active].min()), int(end[self.active].max())):
            self.env[loop.loop_var] = semantics.wrap(value, loop.loop_var.dtype)
            self._exec_where((start <= value) & (value < end), loop.body)

    def exec_While(self, loop):
        before = self.mask, self.active, self.converged
        try:
            while True:
                self._narrow(self.eval(loop.condition))
                if not len(self.active):
                    return
                self.exec(loop.body)
        finally:
            self._restore(before)

    def exec_AssertStmt(self, stmt):
        failing = self.mask & ~_truth(self.eval(stmt.condition))
        if failing.any():
            raise InterpreterError(f"assertion failed: {self.eval(stmt.message)}")
        self.exec(stmt.body)

    def exec_AttrStmt(self, stmt):
        if stmt.attr_key in ("thread_extent", "virtual_thread"):
            raise SimulatorError(f"a '{stmt.attr_key}' attribute inside a launch")
        self.exec(stmt.body)

    def exec_BlockRealize(self, realize):
        raise SimulatorError(f"block '{realize.block.name_hint}' inside a launch: lower the function first")

    def exec_Allocate(self, stmt):
        count = 1
        for extent in stmt.extents:
            value = self.eval(extent)
            if isinstance(value, np.ndarray):
                raise SimulatorError(f"'{stmt.buffer_var.name}' has a size that differs between threads")
            count *= value
        key = stmt.buffer_var
        if stmt.scope == "shared":
            if key not in self.shared:
                self._allocate(key, stmt.dtype, count)
                self.shared[key] = _Shared(self.storage[key])
            self.storage[key] = self.shared[key].memory
        else:
            self._allocate(key, stmt.dtype, count)
            self.storage[key] = np.repeat(self.storage[key][np.newaxis], self.count, axis=0)
        self.exec(stmt.body)

    def exec_BufferStore(self, store):
        value = self.eval(store.value)
        memory, offset = self._access(store.buffer, store.indices, write=True)
        if isinstance(value, np.ndarray):
            # A value per active thread; threads that store to one address leave one of theirs.
            one_address = memory.ndim == 1 and not isinstance(offset, np.ndarray)
            value = value[self.active[-1]] if one_address else value[self.active]
        if memory.ndim == 2:
            memory[self.active, offset] = value
        else:
            memory[offset] = value

    # -- memory -----------------------------------------------------------------------------
    def _access(self, buffer, indices, write: bool):
        """The memory of `buffer` and the active threads' offsets in it (a scalar when the same for all);
        memory with a row per thread is a `local` allocation."""
        key = buffer.data if buffer.data is not None else buffer
        memory = self.storage.get(key)
        if memory is None:
            raise InterpreterError(f"buffer '{buffer.name}' has no storage here")
        offset = self._offset(buffer, indices)
        if isinstance(offset, np.ndarray) and not self.converged:
            offset = offset[self.active]
        size = memory.shape[-1]
        outside = (np.asarray(offset) < 0) | (np.asarray(offset) >= size)
        if outside.any():
            first = offset[int(np.argmax(outside))] if isinstance(offset, np.ndarray) else offset
            raise InterpreterError(f"access to '{buffer.name}' at offset {first} is outside its {size} elements")
        shared = self.shared.get(key)
        if shared is not None:
            offsets = np.broadcast_to(offset, self.active.shape)
            (shared.write if write else shared.read)(buffer.name, offsets, self.active)
        return memory, offset

    def eval_BufferLoad(self, load):
        memory, offset = self._access(load.buffer, load.indices, write=False)
        if memory.ndim == 1 and not isinstance(offset, np.ndarray):
            value = memory[offset]
            return semantics.wrap(value.item() if dt.is_int(load.dtype) or dt.is_uint(load.dtype)
                                  or dt.is_bool(load.dtype) else value, load.dtype)
        values = memory[self.active, offset] if memory.ndim == 2 else memory[offset]
        if self.converged:
            return values
        every = np.zeros(self.count, dtype=memory.dtype)
        every[self.active] = values
        return every

    # -- expressions ------------------------------------------------------------------------
    def eval_Call(self, call):
        if call.op == "tir.tvm_storage_sync":
            return self._barrier()
        if call.op in SHUFFLES:
            return warp_collectives.shuffle(self, call)
        if call.op == "tir.ptx_mma":
            return warp_collectives.mma(self, call)
        if call.op == "tir.tvm_warp_activemask":
            return semantics.wrap(0xFFFFFFFF, call.dtype)
        if call.op == "tir.if_then_else":
            condition = self.eval(call.args[0])
            if not isinstance(condition, np.ndarray):
                return self.eval(call.args[1] if condition else call.args[2])
            condition = _truth(condition)
            true_value = self._eval_where(condition, call.args[1], call.dtype)
            false_value = self._eval_where(~condition, call.args[2], call.dtype)
            return semantics.wrap(np.where(condition, true_value, false_value), call.dtype)
        return super().eval_Call(call)

    def _eval_where(self, condition, expr, dtype: str):
        """`expr` for the active threads where `condition` holds (only they load); 0 where none does."""
        before = self._narrow(condition)
        try:
            return self.eval(expr) if len(self.active) else semantics.wrap(0, dtype)
        finally:
            self._restore(before)

    def _barrier(self) -> int:
        if not self.converged:
            left_out = int(np.flatnonzero(~self.mask)[0])
            raise SimulatorError(f"threads wait at a barrier that the others never reach "
                                 f"(thread {left_out} is left out by a condition)")
        for shared in self.shared.values():
            shared.new_epoch()
        return 0

    def _of_active(self, value):
        return value[self.active] if isinstance(value, np.ndarray) else value

    def eval_Cast(self, cast):
        value = self.eval(cast.value)
        to_integer = dt.is_int(cast.dtype) or dt.is_uint(cast.dtype)
        if to_integer and isinstance(value, np.ndarray) and value.dtype.kind == "f":
            # As semantics.cast does for one value: toward zero, non-finite values to 0.
            value = np.where(np.isfinite(value), np.trunc(value), 0).astype(np.int64)
        return semantics.cast(value, cast.dtype)

    def _refuse_vector(self, node):
        raise SimulatorError(f"vector values ({type(node).__name__}) are not simulated")

    eval_Ramp = eval_Broadcast = eval_Shuffle = _refuse_vector


def _truth(condition) -> np.ndarray:
    """A condition as booleans: an array with an element per thread, or a 0-d array."""
    return np.asarray(condition).astype(bool, copy=False)


def _launch_loops(loop: tir.For) -> tuple[list[tir.For], tir.Stmt]:
    """The thread_binding loops nested directly from `loop` down, and the kernel body below."""
    loops, stmt = [], loop
    while isinstance(stmt, tir.For) and stmt.kind == "thread_binding":
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def _dims(loops, outer: Interpreter, prefix: str) -> list:
    """[(loop or None, extent)] for x, y, z of `prefix` (blockIdx or threadIdx)."""
    dims = [(None, 1)] * 3
    for loop in loops:
        kind, _, axis = loop.thread_tag.partition(".")
        if kind == prefix:
            if dims[_INDEX[axis]][0] is not None:
                raise SimulatorError(f"two loops bound to {loop.thread_tag} in one launch")
            dims[_INDEX[axis]] = (loop, outer.eval(loop.extent))
    return dims


class _HostInterpreter(Interpreter):
    """Runs the statements outside launches; each launch runs on simulated threads."""

    def exec_For(self, loop):
        if loop.kind != "thread_binding":
            return super().exec_For(loop)
        loops, body = _launch_loops(loop)
        if any(not (f.thread_tag.startswith("blockIdx.") or f.thread_tag.startswith("threadIdx."))
               or f.thread_tag.split(".")[1] not in _INDEX for f in loops):
            raise SimulatorError(f"unknown thread tags {[f.thread_tag for f in loops]}")
        grid, threads = _dims(loops, self, "blockIdx"), _dims(loops, self, "threadIdx")
        for bz in range(grid[2][1]):
            for by in range(grid[1][1]):
                for bx in range(grid[0][1]):
                    self._run_block(body, grid, (bx, by, bz), threads)

    def _run_block(self, body, grid, block_index, threads) -> None:
        (_, nx), (_, ny), (_, nz) = threads
        count = nx * ny * nz
        if count <= 0:
            return
        for (loop, _), value in zip(grid, block_index):
            if loop is not None:
                self.env[loop.loop_var] = semantics.wrap(value, loop.loop_var.dtype)
        block = _BlockInterpreter(self, count)
        linear = np.arange(count)
        for (loop, _), index in zip(threads, (linear % nx, linear // nx % ny, linear // (nx * ny))):
            if loop is not None:
                block.env[loop.loop_var] = semantics.wrap(index, loop.loop_var.dtype)
        try:
            block.exec(body)
        except InterpreterError as error:
            raise SimulatorError(f"block {block_index}: {error}") from error


def simulate(func: tir.PrimFunc, *args) -> None:
    """Runs `func` (with thread_binding loops) on numpy arrays and numbers, like interpreter.run."""
    machine = _HostInterpreter()
    machine.bind_arguments(func, args)
    with np.errstate(all="ignore"):
        machine.exec(func.body)
