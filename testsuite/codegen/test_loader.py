"""The loader's argument checks: each error names the kernel, the parameter, what was
expected and what came."""

import numpy as np
import pytest
from codegen_tir import elementwise, i64, kernel, load, loop, param, store

from relax.codegen import build_host_library
from relax.ir import tir
from relax.runtime.kernels import KernelCallError
from relax.runtime.errors import VMError


def _symbolic_add(noalias=True):
    n = tir.Var("n", "int64")
    a, b, c = param("A", "float32", (n,)), param("B", "float32", (n,)), param("C", "float32", (n,))
    i = tir.Var("i", "int64")
    return kernel([a, b, c], loop(i, n, store(c[1], i, tir.Add(load(a[1], i), load(b[1], i)))), noalias)


def _reshape_2d():
    """B (n, 2) <- A (2 * n,): a shape expression checked after n is bound from B."""
    n = tir.Var("n", "int64")
    a, b = param("A", "int32", (tir.Mul(n, i64(2)),)), param("B", "int32", (n, i64(2)))
    i = tir.Var("i", "int64")
    return kernel([a, b], loop(i, tir.Mul(n, i64(2)), store(b[1], i, load(a[1], i))))


@pytest.fixture(scope="module")
def library():
    return build_host_library({"add": _symbolic_add(), "add_may_alias": _symbolic_add(noalias=False),
                               "reshape": _reshape_2d(), "fixed": elementwise(4, ["int8"], "int8", tir.Not)})


def test_symbolic_sizes_bind_from_any_call(library):
    add = library.get_function("add")
    for size in (0, 1, 1000):
        x, y = np.arange(size, dtype=np.float32), np.full(size, 2, np.float32)
        out = np.zeros(size, np.float32)
        add(x, y, out)
        np.testing.assert_array_equal(out, x + 2)


@pytest.mark.parametrize("args, message", [
    (lambda: (np.zeros(3, np.float32), np.zeros(3, np.float32)), "expects 3 arguments, got 2"),
    (lambda: (np.zeros(3, np.float64), np.zeros(3, np.float32), np.zeros(3, np.float32)),
     "parameter 'A' expects dtype float32, got float64"),
    (lambda: (np.zeros(3, np.float32), np.zeros(4, np.float32), np.zeros(3, np.float32)),
     r"parameter 'B' dimension 0 must be n = 3, got shape \(4,\)"),
    (lambda: (np.zeros((3, 1), np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32)),
     r"parameter 'A' expects 1 dimensions \('n',\), got shape \(3, 1\)"),
    (lambda: (np.zeros(6, np.float32)[::2], np.zeros(3, np.float32), np.zeros(3, np.float32)),
     "parameter 'A' must be a C-contiguous"),
    (lambda: ([1.0, 2.0], np.zeros(2, np.float32), np.zeros(2, np.float32)),
     "parameter 'A' expects a float32 tensor, got list"),
])
def test_bad_arguments(library, args, message):
    with pytest.raises(KernelCallError, match=f"kernel 'add': {message}"):
        library.get_function("add")(*args())


def test_errors_are_vm_errors(library):
    with pytest.raises(VMError):
        library.get_function("fixed")(np.zeros(5, np.int8), np.zeros(4, np.int8))


def test_shape_expression_is_checked(library):
    reshape = library.get_function("reshape")
    out = np.zeros((3, 2), np.int32)
    reshape(np.arange(6, dtype=np.int32), out)
    np.testing.assert_array_equal(out, np.arange(6).reshape(3, 2))
    with pytest.raises(KernelCallError, match=r"parameter 'A' dimension 0 must be \(n \* 2\) = 6, got shape \(7,\)"):
        reshape(np.arange(7, dtype=np.int32), out)


def test_inputs_may_alias_but_a_noalias_output_may_not(library):
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    library.get_function("add")(x, x, out)  # the same input twice is fine
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(KernelCallError, match="output 'C' overlaps argument 'A'"):
        library.get_function("add")(x, np.ones(8, np.float32), x)
    # Without tir.noalias the kernel makes no such assumption, and works in place.
    library.get_function("add_may_alias")(x, np.ones(8, np.float32), x)
    np.testing.assert_array_equal(x, np.arange(8) + 1)


def test_scalar_type_errors():
    n = tir.Var("n", "int64")
    a = param("A", "float32", (n,))
    alpha = tir.Var("alpha", "float32")
    count = tir.Var("count", "int32")
    i = tir.Var("i", "int64")
    value = tir.Mul(alpha, tir.Cast("float32", count))
    lib = build_host_library({"fill": kernel([alpha, count, a], loop(i, n, store(a[1], i, value)))})
    fill = lib.get_function("fill")
    out = np.zeros(5, np.float32)
    fill(np.float32(1.5), np.int64(-4), out)
    np.testing.assert_array_equal(out, np.full(5, -6.0, np.float32))
    with pytest.raises(KernelCallError, match="parameter 'count' expects a int32 scalar, got 2.5"):
        fill(1.0, 2.5, out)
    with pytest.raises(KernelCallError, match="parameter 'alpha' expects a float32 scalar"):
        fill("x", 2, out)


def test_misaligned_buffer_is_refused(library):
    raw = np.zeros(4 * 8 + 1, np.uint8)
    misaligned = np.frombuffer(raw.data, dtype=np.float32, count=8, offset=1)
    assert misaligned.flags.c_contiguous
    with pytest.raises(KernelCallError, match="parameter 'A' is not aligned to its 4-byte elements"):
        library.get_function("add")(misaligned, np.zeros(8, np.float32), np.zeros(8, np.float32))


def test_size_parameter_must_agree_with_the_arrays():
    """fill(A: (n,), n: int64): the kernel loops to the parameter n, so A's length must be n."""
    n = tir.Var("n", "int64")
    a = param("A", "float32", (n,))
    i = tir.Var("i", "int64")
    lib = build_host_library({"fill": kernel([a, n], loop(i, n, store(a[1], i, tir.FloatImm("float32", 1.0))))})
    fill = lib.get_function("fill")
    assert fill.info.symbolic_vars == ()  # n is a parameter, not a size passed after the scalars
    out = np.zeros(5, np.float32)
    fill(out, 5)
    assert out.tolist() == [1.0] * 5
    with pytest.raises(KernelCallError, match=r"parameter 'A' dimension 0 must be n = 9, got shape \(5,\)"):
        fill(out, 9)
