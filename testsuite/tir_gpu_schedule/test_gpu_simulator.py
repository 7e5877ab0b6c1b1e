"""The GPU thread simulator (relax.tir.gpu_simulator): barriers, warp shuffles, shared and local memory.

Hand-written kernels in the lowered form (thread_binding loops, Allocate, flat buffers); numpy
computes what CUDA would.
"""

import numpy as np
import pytest

from relax.ir import tir
from relax.tir.gpu_schedule.launch import allocate, imm, launch, scoped_buffer, seq, sync
from relax.tir.gpu_simulator import SimulatorError, simulate
from relax.tir.interpreter import InterpreterError, run


def _func(buffers, body):
    params = [tir.Var(b.name + "_handle", "handle") for b in buffers]
    return tir.PrimFunc(tuple(params), body, buffer_map=tuple(zip(params, buffers)))


def _buffer(name, n, dtype="float32"):
    return tir.Buffer(name, (imm("int64", n),), dtype, tir.Var(name, "handle"))


def _reverse_in_blocks(threads: int, blocks: int, barrier: bool = True):
    """B[block*T + t] = A[block*T + T-1-t], through a shared array (needs the barrier)."""
    A, B = _buffer("A", threads * blocks), _buffer("B", threads * blocks)

    def body(ix):
        bx, tx = ix["blockIdx.x"], ix["threadIdx.x"]
        shared = scoped_buffer("s", "float32", (threads,), scope="shared")
        base = tir.Mul(bx, imm("int64", threads))
        return allocate(shared, seq(
            tir.BufferStore(shared, tir.BufferLoad(A, (tir.Add(base, tx),)), (tx,)),
            sync() if barrier else None,
            tir.BufferStore(B, tir.BufferLoad(shared, (tir.Sub(imm("int64", threads - 1), tx),)),
                            (tir.Add(base, tx),))))

    return _func([A, B], launch("int64", "k", {"x": imm("int64", blocks)}, {"x": imm("int64", threads)}, body))


def test_barrier_orders_shared_memory_between_threads():
    func = _reverse_in_blocks(40, 3)
    a = np.arange(120, dtype=np.float32)
    b = np.zeros_like(a)
    simulate(func, a, b)
    np.testing.assert_array_equal(b, a.reshape(3, 40)[:, ::-1].reshape(-1))


def test_the_interpreter_refuses_barriers():
    a = np.arange(8, dtype=np.float32)
    with pytest.raises(InterpreterError, match="barrier"):
        run(_reverse_in_blocks(8, 1), a, np.zeros_like(a))


def _shuffle_kernel(op: str, lanes: int, argument: int, width: int):
    A, B = _buffer("A", lanes), _buffer("B", lanes)

    def body(ix):
        tx = ix["threadIdx.x"]
        value = tir.BufferLoad(A, (tx,))
        mask = tir.Call("uint32", "tir.tvm_warp_activemask", ())
        shuffled = tir.Call("float32", op, (mask, value, imm("int32", argument), imm("int32", width), imm("int32", 32)))
        return tir.BufferStore(B, shuffled, (tx,))

    return _func([A, B], launch("int64", "k", {"x": imm("int64", 1)}, {"x": imm("int64", lanes)}, body))


@pytest.mark.parametrize("lanes,offset,width", [(32, 1, 32), (32, 4, 8), (64, 16, 32), (40, 3, 8)])
def test_shuffle_down(lanes, offset, width):
    a = np.arange(lanes, dtype=np.float32) * 10
    b = np.zeros_like(a)
    simulate(_shuffle_kernel("tir.tvm_warp_shuffle_down", lanes, offset, width), a, b)
    lane = np.arange(lanes)
    source = np.where(lane % width + offset < width, lane + offset, lane)
    np.testing.assert_array_equal(b, a[source])


def test_shuffle_from_a_lane_the_block_does_not_have_is_an_error():
    a = np.arange(40, dtype=np.float32)
    with pytest.raises(SimulatorError, match="left the warp"):
        simulate(_shuffle_kernel("tir.tvm_warp_shuffle_down", 40, 3, 16), a, np.zeros_like(a))


def test_shuffle_reads_one_lane_of_each_group():
    a = np.arange(64, dtype=np.float32)
    b = np.zeros_like(a)
    simulate(_shuffle_kernel("tir.tvm_warp_shuffle", 64, 3, 8), a, b)
    np.testing.assert_array_equal(b, a[np.arange(64) // 8 * 8 + 3])


def test_local_memory_is_per_thread():
    A, B = _buffer("A", 64), _buffer("B", 64)

    def body(ix):
        tx = ix["threadIdx.x"]
        acc = scoped_buffer("acc", "float32", (1,))
        zero = imm("int64", 0)
        return allocate(acc, seq(
            tir.BufferStore(acc, tir.BufferLoad(A, (tx,)), (zero,)),
            sync(),  # every thread has written its own acc before any reads it back
            tir.BufferStore(B, tir.Mul(tir.BufferLoad(acc, (zero,)), tir.FloatImm("float32", 2.0)), (tx,))))

    a = np.arange(64, dtype=np.float32)
    b = np.zeros_like(a)
    simulate(_func([A, B], launch("int64", "k", {"x": imm("int64", 1)}, {"x": imm("int64", 64)}, body)), a, b)
    np.testing.assert_array_equal(b, 2 * a)


def test_errors_inside_a_thread_are_reported():
    A, B = _buffer("A", 4), _buffer("B", 4)

    def body(ix):
        tx = ix["threadIdx.x"]
        return tir.BufferStore(B, tir.BufferLoad(A, (tir.Add(tx, imm("int64", 1)),)), (tx,))

    func = _func([A, B], launch("int64", "k", {"x": imm("int64", 1)}, {"x": imm("int64", 4)}, body))
    with pytest.raises(SimulatorError, match="outside"):
        simulate(func, np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_thread_loops_must_be_directly_nested():
    A = _buffer("A", 4)
    tx, i = tir.Var("tx", "int64"), tir.Var("i", "int64")
    inner = tir.For(tx, imm("int64", 0), imm("int64", 2), "thread_binding",
                    tir.BufferStore(A, tir.FloatImm("float32", 1.0), (tx,)), thread_tag="threadIdx.x")
    bx = tir.Var("bx", "int64")
    body = tir.For(bx, imm("int64", 0), imm("int64", 1), "thread_binding",
                   tir.For(i, imm("int64", 0), imm("int64", 2), "serial", inner), thread_tag="blockIdx.x")
    with pytest.raises(SimulatorError, match="thread_binding"):
        simulate(_func([A], body), np.zeros(4, np.float32))


def test_a_missing_barrier_is_a_race_whatever_the_thread_order():
    a = np.arange(40, dtype=np.float32)
    for _ in range(3):
        with pytest.raises(SimulatorError, match="race on shared 's'"):
            simulate(_reverse_in_blocks(40, 1, barrier=False), a, np.zeros_like(a))
