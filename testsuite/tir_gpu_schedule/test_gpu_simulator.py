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


def _one_block(threads: int, buffers, body):
    return _func(buffers, launch("int64", "k", {"x": imm("int64", 1)}, {"x": imm("int64", threads)},
                                 lambda ix: body(ix["threadIdx.x"])))


def _shuffle(op: str, value, argument: int, width: int):
    mask = tir.Call("uint32", "tir.tvm_warp_activemask", ())
    return tir.Call(value.dtype, op, (mask, value, imm("int32", argument), imm("int32", width), imm("int32", 32)))


def test_a_barrier_that_a_condition_splits_is_an_error():
    A = _buffer("A", 64)
    func = _one_block(64, [A], lambda tx: tir.IfThenElse(tir.LT(tx, imm("int64", 32)), seq(
        sync(), tir.BufferStore(A, tir.FloatImm("float32", 1.0), (tx,)))))
    with pytest.raises(SimulatorError, match="never reach"):
        simulate(func, np.zeros(64, np.float32))


def test_shuffles_under_a_condition_exchange_among_the_active_lanes():
    """Two shuffles in one expression, lanes 48..63 left out: width-16 groups hold no absent lane."""
    A, B = _buffer("A", 64), _buffer("B", 64)

    def body(tx):
        value = tir.BufferLoad(A, (tx,))
        down = _shuffle("tir.tvm_warp_shuffle_down", value, 1, 16)
        pick = _shuffle("tir.tvm_warp_shuffle", tir.Mul(value, tir.FloatImm("float32", 2.0)), 5, 16)
        return tir.IfThenElse(tir.LT(tx, imm("int64", 48)), tir.BufferStore(B, tir.Add(down, pick), (tx,)))

    a = np.arange(64, dtype=np.float32)
    b = np.zeros_like(a)
    simulate(_one_block(64, [A, B], body), a, b)
    lane = np.arange(48)
    down = np.where(lane % 16 + 1 < 16, lane + 1, lane)
    np.testing.assert_array_equal(b[:48], a[down] + 2 * a[lane // 16 * 16 + 5])
    np.testing.assert_array_equal(b[48:], 0)


def test_a_shuffle_from_a_lane_a_condition_left_out_is_an_error():
    A, B = _buffer("A", 32), _buffer("B", 32)
    func = _one_block(32, [A, B], lambda tx: tir.IfThenElse(tir.LT(tx, imm("int64", 20)), tir.BufferStore(
        B, _shuffle("tir.tvm_warp_shuffle_down", tir.BufferLoad(A, (tx,)), 4, 32), (tx,))))
    with pytest.raises(SimulatorError, match="lane 16 reads lane 20, which has left the warp"):
        simulate(func, np.zeros(32, np.float32), np.zeros(32, np.float32))


def test_a_loop_whose_trip_count_depends_on_the_thread_then_a_barrier():
    """Thread t sums A[0..t] (t + 1 trips), then the threads swap sums through shared memory."""
    n = 40
    A, B = _buffer("A", n), _buffer("B", n)
    zero = imm("int64", 0)

    def body(tx):
        acc = scoped_buffer("acc", "float32", (1,))
        shared = scoped_buffer("s", "float32", (n,), scope="shared")
        i = tir.Var("i", "int64")
        accumulate = tir.For(i, zero, tir.Add(tx, imm("int64", 1)), "serial", tir.BufferStore(
            acc, tir.Add(tir.BufferLoad(acc, (zero,)), tir.BufferLoad(A, (i,))), (zero,)))
        return allocate(shared, allocate(acc, seq(
            tir.BufferStore(acc, tir.FloatImm("float32", 0.0), (zero,)),
            accumulate,
            tir.BufferStore(shared, tir.BufferLoad(acc, (zero,)), (tx,)),
            sync(),
            tir.BufferStore(B, tir.BufferLoad(shared, (tir.Sub(imm("int64", n - 1), tx),)), (tx,)))))

    a = np.arange(n, dtype=np.float32)
    b = np.zeros_like(a)
    simulate(_one_block(n, [A, B], body), a, b)
    np.testing.assert_array_equal(b, np.cumsum(a)[::-1])


def test_if_then_else_loads_only_where_its_condition_holds():
    A, B = _buffer("A", 4), _buffer("B", 8)
    func = _one_block(8, [A, B], lambda tx: tir.BufferStore(B, tir.Call("float32", "tir.if_then_else", (
        tir.LT(tx, imm("int64", 4)), tir.BufferLoad(A, (tx,)), tir.FloatImm("float32", -1.0))), (tx,)))
    a = np.arange(4, dtype=np.float32) + 1
    b = np.zeros(8, np.float32)
    simulate(func, a, b)
    np.testing.assert_array_equal(b, [1, 2, 3, 4, -1, -1, -1, -1])


def test_threads_writing_one_shared_element_race():
    A = _buffer("A", 8)
    func = _one_block(8, [A], lambda tx: allocate(
        shared := scoped_buffer("s", "float32", (1,), scope="shared"),
        tir.BufferStore(shared, tir.BufferLoad(A, (tx,)), (imm("int64", 0),))))
    with pytest.raises(SimulatorError, match=r"race on shared 's'\[0\]: thread 1 writes what thread 0 wrote"):
        simulate(func, np.zeros(8, np.float32))


def test_reading_its_own_write_or_reading_together_is_no_race():
    """Every thread reads shared[0] (written by thread 0 before the barrier) and writes then reads its own slot."""
    A, B = _buffer("A", 8), _buffer("B", 8)

    def body(tx):
        shared = scoped_buffer("s", "float32", (8,), scope="shared")
        zero = imm("int64", 0)
        return allocate(shared, seq(
            tir.IfThenElse(tir.EQ(tx, zero), tir.BufferStore(shared, tir.FloatImm("float32", 10.0), (zero,))),
            sync(),
            tir.BufferStore(B, tir.BufferLoad(shared, (zero,)), (tx,)),
            sync(),
            tir.BufferStore(shared, tir.BufferLoad(A, (tx,)), (tx,)),
            tir.BufferStore(B, tir.Add(tir.BufferLoad(B, (tx,)), tir.BufferLoad(shared, (tx,))), (tx,))))

    a = np.arange(8, dtype=np.float32)
    b = np.zeros_like(a)
    simulate(_one_block(8, [A, B], body), a, b)
    np.testing.assert_array_equal(b, a + 10)


def test_kernels_without_collectives_compute_what_the_interpreter_computes():
    """Integer division and modulo of negative values, casts of NaN and infinities, min/max and select,
    per thread: the lockstep arrays follow semantics.py as the interpreter's scalars do."""
    X, I, F = _buffer("X", 8), _buffer("I", 8, "int32"), _buffer("F", 8, "int32")

    def body(tx):
        i = tir.Sub(tir.Cast("int32", tx), imm("int32", 4))  # -4 .. 3
        three = imm("int32", 3)
        integer = tir.Add(tir.Add(tir.Div(i, three), tir.Mod(i, three)), tir.Add(
            tir.FloorDiv(i, three), tir.Max(tir.Min(i, imm("int32", 1)), imm("int32", -2))))
        selected = tir.Select(tir.GT(i, imm("int32", 0)), integer, tir.Mul(integer, imm("int32", 7)))
        return seq(tir.BufferStore(I, selected, (tx,)),
                   tir.BufferStore(F, tir.Cast("int32", tir.BufferLoad(X, (tx,))), (tx,)))

    func = _one_block(8, [X, I, F], body)
    x = np.array([np.nan, np.inf, -np.inf, -2.7, 2.7, -0.5, 1e3, 0], np.float32)
    simulated = [x.copy(), np.zeros(8, np.int32), np.zeros(8, np.int32)]
    reference = [x.copy(), np.zeros(8, np.int32), np.zeros(8, np.int32)]
    simulate(func, *simulated)
    run(func, *reference)
    np.testing.assert_array_equal(simulated[1], reference[1])
    np.testing.assert_array_equal(simulated[2], reference[2])
    np.testing.assert_array_equal(simulated[2], [0, 0, 0, -2, 2, 0, 1000, 0])
