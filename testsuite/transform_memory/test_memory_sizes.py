"""Byte sizes and upper bounds of tensor shapes (transform/memory_sizes.py)."""

from relax.ir import tir
from relax.ir.structural import structural_equal
from relax.transform.memory_sizes import function_upper_bounds, tensor_bytes, upper_bound_bytes

n, m = tir.Var("n", "int64"), tir.Var("m", "int64")


def i64(value):
    return tir.IntImm("int64", value)


def test_static_sizes_are_integers_and_bool_takes_a_byte():
    assert tensor_bytes((i64(2), i64(3)), "float32").value == 24
    assert tensor_bytes((i64(5),), "bool").value == 5
    assert tensor_bytes((), "float16").value == 2


def test_symbolic_sizes_keep_the_variables():
    assert structural_equal(tensor_bytes((n, i64(4)), "float32"), n * i64(16))
    assert structural_equal(tensor_bytes((n, m), "int8"), n * m)


def test_upper_bounds_follow_monotonic_arithmetic():
    bounds = {"n": 1024, "m": 7}
    assert upper_bound_bytes((n, i64(32)), "float32", bounds) == 1024 * 32 * 4
    assert upper_bound_bytes((n + m, tir.FloorDiv(n, i64(3))), "int8", bounds) == 1031 * 342
    assert upper_bound_bytes((tir.Max(n, m), tir.Min(n, m)), "int8", bounds) == 1024 * 7


def test_no_bound_without_every_variable_or_through_subtraction():
    assert upper_bound_bytes((n, m), "float32", {"n": 8}) is None
    assert upper_bound_bytes((n - m,), "float32", {"n": 8, "m": 2}) is None


def test_the_function_attribute_reads_as_plain_integers():
    assert function_upper_bounds({"tir_var_upper_bound": {"n": 1024}}) == {"n": 1024}
    assert function_upper_bounds({"tir_var_upper_bound": {"n": i64(64)}}) == {"n": 64}
    assert function_upper_bounds({}) == {}
