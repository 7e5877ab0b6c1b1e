"""The runtime: dtypes, devices, runtime values, the registry and the allocators."""

import numpy as np
import pytest

from relax.diagnostics import UserError
from relax.runtime import (
    Closure, DataType, Device, PooledAllocator, NaiveAllocator, ShapeTuple, get_global_func, list_global_funcs,
    register_func, remove_global_func, type_key,
)


@pytest.mark.parametrize("name", ["float32", "float16", "int8", "uint64", "bool", "bfloat16", "float32x4",
                                  "handle", "void", "int1"])
def test_dtype_names_round_trip(name):
    assert str(DataType.parse(name)) == name


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64, np.bool_])
def test_dtype_numpy_round_trip(dtype):
    assert DataType.from_numpy(dtype).numpy == np.dtype(dtype)


def test_dtype_codes_are_dlpacks():
    assert DataType.parse("float32") == DataType(2, 32, 1)
    assert DataType.parse("bool") == DataType(1, 1, 1)
    assert DataType.parse("int64") == DataType(0, 64, 1)
    with pytest.raises(UserError, match="unknown data type 'floaty'"):
        DataType.parse("floaty")
    with pytest.raises(UserError, match="cannot be held in a tensor"):
        DataType.parse("bfloat16").numpy


@pytest.mark.parametrize("name", ["float" + "9" * 5000, "float256", "float32x65536", "int8x" + "1" * 5000])
def test_dtype_bits_and_lanes_fit_dlpack(name):
    # A 5000-digit width was a ValueError from int() (an internal error), a width of 256 a
    # struct.error when the constant was written (issue 16).
    with pytest.raises(UserError, match=r"unknown data type '.{1,40}': at most 255 bits and 65535 lanes$"):
        DataType.parse(name)
    assert DataType.parse_or_none(name) is None


def test_devices():
    assert Device.parse("cpu") == Device(1, 0)
    assert Device.parse("cuda:1") == Device(2, 1)
    assert str(Device.parse("llvm")) == "cpu:0"
    with pytest.raises(UserError):
        Device.parse("cpu:x")


def test_shape_tuple_is_a_tuple_of_ints_but_not_a_relax_tuple():
    shape = ShapeTuple([np.int64(2), 3])
    assert shape == (2, 3) and all(type(v) is int for v in shape)
    assert type_key(shape) == "Shape" and type_key((2, 3)) == "Tuple"
    assert repr(shape) == "ShapeTuple([2, 3])"


def test_closure_binds_last_arguments():
    closure = Closure("f", impl=lambda *a: a).bind_last_args((1,)).bind_last_args((2,))
    assert closure.bound_args == (1, 2)


def test_registry():
    @register_func("test.runtime.twice")
    def twice(x):
        return 2 * x

    try:
        assert get_global_func("test.runtime.twice")(4) == 8
        assert "test.runtime.twice" in list_global_funcs()
        with pytest.raises(UserError, match="already registered"):
            register_func("test.runtime.twice", lambda x: x)
        register_func("test.runtime.twice", lambda x: 3 * x, override=True)
        assert get_global_func("test.runtime.twice")(4) == 12
    finally:
        remove_global_func("test.runtime.twice")
    assert get_global_func("test.runtime.twice", allow_missing=True) is None
    with pytest.raises(UserError, match="is not registered"):
        get_global_func("test.runtime.twice")


def test_register_func_as_plain_decorator():
    @register_func
    def test_runtime_plain():
        return 1

    try:
        assert get_global_func("test_runtime_plain")() == 1
    finally:
        remove_global_func("test_runtime_plain")


def test_buffers_are_aligned():
    for allocator in (NaiveAllocator(Device(1)), PooledAllocator(Device(1))):
        for size in (1, 63, 64, 1000):
            assert allocator.alloc(size).buffer.ctypes.data % 64 == 0


def test_pooled_allocator_reuses_only_unreferenced_buffers():
    pool = PooledAllocator(Device(1))
    first = pool.alloc(100)
    address = first.buffer.ctypes.data
    view = first.buffer[:8].view(np.float64)
    del first
    second = pool.alloc(100)
    assert second.buffer.ctypes.data != address  # the view still holds the first buffer
    del second, view
    third = pool.alloc(90)  # same rounded size: the first buffer is free again
    assert third.buffer.ctypes.data == address
    assert pool.allocated_bytes == 2 * 128


def test_pooled_allocator_scans_a_bounded_pool():
    # Deep recursion holds one buffer per frame: a pool of all of them made every request
    # scan every live buffer (quadratic time, minutes for a runaway recursion; issue 16).
    pool = PooledAllocator(Device(1))
    held = [pool.alloc(100) for _ in range(PooledAllocator.MAX_POOLED + 10)]
    assert len(pool._pool[128]) == PooledAllocator.MAX_POOLED
    address = held[3].buffer.ctypes.data
    del held[3]
    assert pool.alloc(100).buffer.ctypes.data == address  # a pooled buffer is still reused


def test_naive_allocator_never_reuses():
    naive = NaiveAllocator(Device(1))
    kept = [naive.alloc(64) for _ in range(3)]
    assert naive.allocated_bytes == 192
    assert len({storage.buffer.ctypes.data for storage in kept}) == 3


def test_non_cpu_allocation_is_refused():
    with pytest.raises(UserError, match="no memory allocator for device cuda:0"):
        NaiveAllocator(Device(2))
