"""tir.checked_index in native code (issue 16): a gather through index data, scalar
and in vector lanes, serial and in a parallel loop; an index out of [-n, n) returns
INDEX_OUT_OF_RANGE and the loader names the index, instead of touching memory. The
reference interpreter runs the same kernels and says the same."""

import numpy as np
import pytest
from codegen_tir import i64, kernel, load, loop, param, store

from relax.codegen import build_host_library
from relax.ir import tir
from relax.runtime.kernels import KernelCallError
from relax.tir.interpreter import InterpreterError, run


def gather(lanes: int, kind: str) -> tir.PrimFunc:
    """C[i] = A[checked_index(I[i], 8)] over 64 int32 indices, `lanes` at a time."""
    a, index, out = param("A", "float32", (8,)), param("I", "int32", (64,)), param("C", "float32", (64,))
    i = tir.Var("i", "int64")
    at = tir.Ramp(tir.Mul(i, i64(lanes)), i64(1), lanes) if lanes > 1 else i
    dtype = "int64" if lanes == 1 else f"int64x{lanes}"
    extent = i64(8) if lanes == 1 else tir.Broadcast(i64(8), lanes)
    position = tir.Call(dtype, "tir.checked_index", (tir.Cast(dtype, load(index[1], at)), extent,
                                                      tir.StringImm("R.test")))
    return kernel([a, index, out], loop(i, i64(64 // lanes), store(out[1], at, load(a[1], position)), kind))


@pytest.fixture(scope="module")
def library():
    return build_host_library({"scalar": gather(1, "serial"), "vector": gather(4, "serial"),
                               "threads": gather(1, "parallel")})


@pytest.mark.parametrize("name", ["scalar", "vector", "threads"])
def test_checked_gather(library, name):
    a = np.arange(8, dtype=np.float32) * 10
    index = (np.arange(64, dtype=np.int32) % 16) - 8  # every index of [-8, 8)
    out = np.zeros(64, np.float32)
    library.get_function(name)(a, index, out)
    np.testing.assert_array_equal(out, a[index])
    index[37] = 8
    with pytest.raises(KernelCallError, match=rf"kernel '{name}': index 8 out of range \[-8, 8\) in R\.test$"):
        library.get_function(name)(a, index, out)
    index[37] = -2**31
    with pytest.raises(KernelCallError, match=r"index -2147483648 out of range"):
        library.get_function(name)(a, index, out)


def test_interpreter_agrees():
    index = np.arange(64, dtype=np.int32) % 8
    index[5] = -9
    with pytest.raises(InterpreterError, match=r"^index -9 out of range \[-8, 8\) in R\.test$"):
        run(gather(4, "serial"), np.zeros(8, np.float32), index, np.zeros(64, np.float32))
