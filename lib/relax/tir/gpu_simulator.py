"""A GPU thread simulator for TIR: runs a function with thread_binding loops on numpy arrays.

    simulate(prim_func, a, b, c)      # numpy arrays for buffer parameters, written in place

The reference interpreter (interpreter.py) runs threads one after another, which is
exact only for kernels without barriers or warp shuffles. Here each launch (a
nest of thread_binding loops, blockIdx.* and threadIdx.*, directly inside one
another) runs block by block; inside a block every GPU thread is a Python thread
with its own interpreter (its own variables and `local` allocations), sharing the
function's buffers and the block's `shared` allocations. Collectives meet:

- `tir.tvm_storage_sync("shared")` (__syncthreads) waits until every thread of the
  block still running has arrived;
- `tir.tvm_warp_shuffle_down` / `tir.tvm_warp_shuffle` exchange a value among the
  running lanes of a warp (32 consecutive threads, x fastest), as __shfl_*_sync do;
- a thread that finishes leaves its block and warp, so the others do not wait on it.

Shared memory is checked for races whatever order the OS runs the threads in: each
thread counts the barriers it has passed (its epoch), and every element of a
`shared` allocation remembers its last writer and its readers with their epochs. A
thread touching an element that another thread wrote (or, for a write, read) in the
same or a later epoch, with no barrier in between, is a SimulatorError.

A collective no thread can complete (threads waiting at different points) is
reported as a SimulatorError after a timeout, as is any error inside a thread.
Slow (one OS thread per GPU thread): test on small sizes and few threads.
"""

from __future__ import annotations

import threading

import numpy as np

from ..ir import tir
from . import semantics
from .interpreter import Interpreter, InterpreterError

WARP_SIZE = 32
WAIT_SECONDS = 30.0  # a collective that waits longer than this is taken as a deadlock
_INDEX = {"x": 0, "y": 1, "z": 2}


class SimulatorError(InterpreterError):
    """The kernel deadlocked, raced into an error, or has a launch shape the simulator rejects."""


class _Group:
    """Threads that meet at a collective: a block (barriers) or a warp (shuffles)."""

    def __init__(self, members: int):
        self.alive = members
        self.arrived: dict[int, object] = {}
        self.generation = 0
        self.result: dict[int, object] = {}
        self.condition = threading.Condition()

    def meet(self, member: int, value=None) -> dict:
        """Waits until every running member has arrived; returns {member: value} of all of them."""
        with self.condition:
            generation = self.generation
            self.arrived[member] = value
            self._release_if_complete()
            if not self.condition.wait_for(lambda: self.generation != generation, WAIT_SECONDS):
                raise SimulatorError("threads wait at a barrier or shuffle that the others never reach")
            return self.result

    def leave(self) -> None:
        with self.condition:
            self.alive -= 1
            self._release_if_complete()

    def _release_if_complete(self) -> None:
        if self.arrived and len(self.arrived) >= self.alive:
            self.result, self.arrived = dict(self.arrived), {}
            self.generation += 1
            self.condition.notify_all()


class _Block:
    """What the threads of one GPU block share."""

    def __init__(self, threads: int):
        self.barrier = _Group(threads)
        self.warps = [_Group(min(WARP_SIZE, threads - w * WARP_SIZE)) for w in range(-(-threads // WARP_SIZE))]
        self.shared: dict = {}
        self.accesses: dict = {}  # (shared key, offset) -> [(writer, epoch) | None, {reader: epoch}]
        self.lock = threading.Lock()

    def note(self, key, offsets, thread: int, epoch: int, write: bool, name: str) -> None:
        """Records an access to shared memory; raises on one that races with another thread's."""
        with self.lock:
            for offset in np.atleast_1d(offsets).tolist():
                record = self.accesses.setdefault((key, offset), [None, {}])
                writer, readers = record
                if writer is not None and writer[0] != thread and writer[1] >= epoch:
                    raise SimulatorError(f"race on shared '{name}'[{offset}]: thread {thread} "
                                         f"{'writes' if write else 'reads'} what thread {writer[0]} wrote "
                                         f"with no barrier between")
                if write:
                    racing = [t for t, e in readers.items() if t != thread and e >= epoch]
                    if racing:
                        raise SimulatorError(f"race on shared '{name}'[{offset}]: thread {thread} writes what "
                                             f"thread {racing[0]} read with no barrier between")
                    record[0], record[1] = (thread, epoch), {}
                else:
                    readers[thread] = epoch


class _ThreadInterpreter(Interpreter):
    """The interpreter of one GPU thread: collectives meet the other threads of its block."""

    def __init__(self, outer: Interpreter, block: _Block, linear_id: int):
        super().__init__()
        self.env = dict(outer.env)
        self.storage = dict(outer.storage)
        self.block, self.linear_id = block, linear_id
        self.lane, self.warp = linear_id % WARP_SIZE, block.warps[linear_id // WARP_SIZE]
        self.epoch = 0  # barriers passed

    def _shared_access(self, buffer, indices, write: bool):
        memory, offset = Interpreter._address(self, buffer, indices)
        key = buffer.data if buffer.data is not None else buffer
        if key in self.block.shared:
            self.block.note(key, offset, self.linear_id, self.epoch, write, buffer.name)
        return memory, offset

    def _address(self, buffer, indices):
        return self._shared_access(buffer, indices, write=False)

    def exec_BufferStore(self, store):
        value = self.eval(store.value)
        memory, offset = self._shared_access(store.buffer, store.indices, write=True)
        memory[offset] = value

    def eval_Call(self, call):
        if call.op == "tir.tvm_storage_sync":
            self.block.barrier.meet(self.linear_id)
            self.epoch += 1
            return 0
        if call.op in ("tir.tvm_warp_shuffle_down", "tir.tvm_warp_shuffle"):
            _mask, value, offset, width = (self.eval(arg) for arg in call.args[:4])
            values = self.warp.meet(self.lane, value)
            base = self.lane - self.lane % width
            if call.op == "tir.tvm_warp_shuffle":
                source = base + offset % width
            else:
                source = self.lane + offset if self.lane % width + offset < width else self.lane
            if source not in values:
                raise SimulatorError(f"lane {self.lane} reads lane {source}, which has left the warp")
            return values[source]
        if call.op == "tir.tvm_warp_activemask":
            return semantics.wrap(0xFFFFFFFF, call.dtype)
        return super().eval_Call(call)

    def exec_Allocate(self, stmt):
        if stmt.scope != "shared":
            return super().exec_Allocate(stmt)
        with self.block.lock:
            if stmt.buffer_var not in self.block.shared:
                count = 1
                for extent in stmt.extents:
                    count *= self.eval(extent)
                self._allocate(stmt.buffer_var, stmt.dtype, count)
                self.block.shared[stmt.buffer_var] = self.storage[stmt.buffer_var]
            self.storage[stmt.buffer_var] = self.block.shared[stmt.buffer_var]
        self.exec(stmt.body)

    def exec_For(self, loop):
        if loop.kind == "thread_binding":
            raise SimulatorError(f"a thread_binding loop ({loop.thread_tag}) inside another statement of a launch")
        super().exec_For(loop)


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
        (lx, nx), (ly, ny), (lz, nz) = threads
        count = nx * ny * nz
        if count <= 0:
            return
        block, errors = _Block(count), []
        for (loop, _), value in zip(grid, block_index):
            if loop is not None:
                self.env[loop.loop_var] = semantics.wrap(value, loop.loop_var.dtype)

        def thread_main(linear_id: int) -> None:
            machine = _ThreadInterpreter(self, block, linear_id)
            index = (linear_id % nx, linear_id // nx % ny, linear_id // (nx * ny))
            for (loop, _), value in zip(threads, index):
                if loop is not None:
                    machine.env[loop.loop_var] = semantics.wrap(value, loop.loop_var.dtype)
            try:
                with np.errstate(all="ignore"):
                    machine.exec(body)
            except Exception as error:  # reported once the block has finished
                errors.append(error)
            finally:
                machine.warp.leave()
                block.barrier.leave()

        workers = [threading.Thread(target=thread_main, args=(i,), daemon=True) for i in range(count)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        if errors:
            first = errors[0]
            if isinstance(first, InterpreterError):
                raise SimulatorError(f"block {block_index}: {first}") from first
            raise first


def simulate(func: tir.PrimFunc, *args) -> None:
    """Runs `func` (with thread_binding loops) on numpy arrays and numbers, like interpreter.run."""
    machine = _HostInterpreter()
    machine.bind_arguments(func, args)
    with np.errstate(all="ignore"):
        machine.exec(func.body)
