"""Legalized creation operators, astype and where against numpy."""

import numpy as np

from relax import ir
from relax.ir import tir

from numeric import run_op

X = np.arange(12, dtype="float32").reshape(3, 4)


def shape(*dims):
    return ir.ShapeExpr(tuple(tir.IntImm("int64", d) for d in dims))


def prim(value):
    return ir.PrimValue(tir.IntImm("int64", value))


def test_zeros_ones_full():
    np.testing.assert_array_equal(run_op("zeros", shape(2, 3), dtype="float32"), np.zeros((2, 3), "float32"))
    np.testing.assert_array_equal(run_op("ones", shape(4), dtype="int32"), np.ones(4, "int32"))
    np.testing.assert_array_equal(run_op("ones_like", X), np.ones_like(X))
    np.testing.assert_array_equal(run_op("zeros_like", X, dtype="int8"), np.zeros_like(X, "int8"))
    full = run_op("full", shape(2, 2), np.array(0.25, "float32"), dtype="float32")
    np.testing.assert_array_equal(full, np.full((2, 2), 0.25, "float32"))
    np.testing.assert_array_equal(run_op("full_like", X, np.array(7, "int32"), dtype="int32"), np.full((3, 4), 7, "int32"))


def test_arange():
    np.testing.assert_array_equal(run_op("arange", prim(2), prim(11), prim(3)), np.arange(2, 11, 3))
    np.testing.assert_array_equal(run_op("arange", prim(5), dtype="float32"), np.arange(5, dtype="float32"))
    np.testing.assert_array_equal(run_op("arange", prim(5), prim(0), prim(-2)), np.arange(5, 0, -2))


def test_tril_triu():
    np.testing.assert_array_equal(run_op("tril", X, prim(0)), np.tril(X))
    np.testing.assert_array_equal(run_op("tril", X, prim(-1)), np.tril(X, -1))
    np.testing.assert_array_equal(run_op("triu", X, prim(1)), np.triu(X, 1))


def test_astype_and_where():
    np.testing.assert_array_equal(run_op("astype", X - 5.5, dtype="int32"), (X - 5.5).astype("int32"))
    np.testing.assert_array_equal(run_op("astype", X, dtype="float16"), X.astype("float16"))
    condition = X > 5
    np.testing.assert_array_equal(run_op("where", condition, X, np.zeros((4,), "float32")), np.where(condition, X, 0))
