"""eye, eye_like, hamming_window and meshgrid: inference and kernels against numpy."""

import numpy as np
import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

from numeric import call, dims_of, prim, tensor, run_op


def test_eye():
    np.testing.assert_array_equal(run_op("eye", prim(3), prim(4), prim(1)), np.eye(3, 4, 1, dtype="float32"))
    np.testing.assert_array_equal(run_op("eye", prim(3), prim(3), prim(-1), dtype="int32"), np.eye(3, k=-1, dtype="int32"))
    x = np.zeros((2, 3), "float16")
    np.testing.assert_array_equal(run_op("eye_like", x, prim(0)), np.eye(2, 3, dtype="float16"))
    n = tir.Var("n", "int64")
    assert dims_of(struct_info_of(call("eye", ir.PrimValue(n), prim(2), prim(0)))) == [n, 2]
    with pytest.raises(DiagnosticError, match="n must not be negative, got -2 in R.eye"):
        struct_info_of(call("eye", prim(-2), prim(2), prim(0)))
    with pytest.raises(DiagnosticError, match="2-D tensor, got rank 1 in R.eye_like"):
        struct_info_of(call("eye_like", tensor("x", (3,)), prim(0)))


@pytest.mark.parametrize("size, periodic", [(5, 1), (6, 0), (1, 0)])
def test_hamming_window(size, periodic):
    out = run_op("hamming_window", prim(size), prim(periodic), prim(0.54, "float64"), prim(0.46, "float64"),
                 dtype="float32")
    span = size + 1 if periodic else size
    expected = np.hamming(span)[:size] if size > 1 else np.ones(1)
    np.testing.assert_allclose(out, expected.astype("float32"), rtol=1e-6, atol=1e-6)


def test_meshgrid():
    a, b, c = (np.arange(n, dtype="float32") + 10 * n for n in (2, 3, 4))
    for indexing in ("ij", "xy"):
        got = run_op("meshgrid", [a, b, c], indexing=indexing)
        for grid, expected in zip(got, np.meshgrid(a, b, c, indexing=indexing)):
            np.testing.assert_array_equal(grid, expected)
    n = tir.Var("n", "int64")
    info = struct_info_of(call("meshgrid", ir.Tuple((tensor("a", (n,)), tensor("b", (3,)))), indexing="xy"))
    assert [dims_of(f) for f in info.fields] == [[3, n], [3, n]]
    with pytest.raises(DiagnosticError, match="data types float32 and int32 must be equal in R.meshgrid"):
        struct_info_of(call("meshgrid", ir.Tuple((tensor("a", (2,)), tensor("b", (3,), "int32"))), indexing="ij"))
