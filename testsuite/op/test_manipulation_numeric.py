"""Legalized manipulation operators against numpy."""

import numpy as np
import pytest

from relax import ir
from relax.ir import tir

from numeric import run_op

RNG = np.random.default_rng(2)
X = RNG.standard_normal((2, 3, 4)).astype("float32")


def shape(*dims):
    return ir.ShapeExpr(tuple(tir.IntImm("int64", d) for d in dims))


def ints(*values):
    return ir.Tuple(tuple(ir.PrimValue(tir.IntImm("int64", v)) for v in values))


@pytest.mark.parametrize("dims", [(6, 4), (24,), (4, -1), (2, 2, 2, 3)])
def test_reshape(dims):
    expected = X.reshape(dims)
    np.testing.assert_array_equal(run_op("reshape", X, shape(*dims)), expected)


@pytest.mark.parametrize("axes", [None, (2, 0, 1), (0, 2, 1), (-1, 0, 1)])
def test_permute_dims(axes):
    np.testing.assert_array_equal(run_op("permute_dims", X, axes=axes), np.transpose(X, axes))


def test_broadcast_to_expand_squeeze_flatten():
    b = RNG.standard_normal((3, 1)).astype("float32")
    np.testing.assert_array_equal(run_op("broadcast_to", b, shape(2, 3, 5)), np.broadcast_to(b, (2, 3, 5)))
    np.testing.assert_array_equal(run_op("expand_dims", X, axis=(0, -1)), X[None, ..., None])
    y = X.reshape(1, 2, 1, 12)
    np.testing.assert_array_equal(run_op("squeeze", y, axis=None), y.squeeze())
    np.testing.assert_array_equal(run_op("squeeze", y, axis=(2,)), y.squeeze(2))
    np.testing.assert_array_equal(run_op("flatten", X), X.reshape(-1))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_and_stack(axis):
    other = RNG.standard_normal((2, 3, 4)).astype("float32")
    np.testing.assert_array_equal(run_op("concat", [X, other, X], axis=axis), np.concatenate([X, other, X], axis))
    np.testing.assert_array_equal(run_op("stack", [X, other], axis=axis), np.stack([X, other], axis))


def test_split_by_sections_and_indices():
    pieces = run_op("split", X, indices_or_sections=2, axis=2)
    for got, want in zip(pieces, np.split(X, 2, axis=2)):
        np.testing.assert_array_equal(got, want)
    pieces = run_op("split", X, indices_or_sections=(1, 3), axis=-1)
    for got, want in zip(pieces, np.split(X, [1, 3], axis=-1)):
        np.testing.assert_array_equal(got, want)


def test_strided_slice():
    x = RNG.standard_normal((6, 5)).astype("float32")
    got = run_op("strided_slice", x, ints(0, 1), ints(1, 0), ints(5, 4), ints(2, 3))
    np.testing.assert_array_equal(got, x[1:5:2, 0:4:3])
    np.testing.assert_array_equal(run_op("strided_slice", x, ints(1,), ints(-1,), ints(-6,), ints(-2,)), x[:, -1:-6:-2])


def test_take_tile_repeat_flip():
    idx = np.array([2, 0, -1], "int64")
    np.testing.assert_array_equal(run_op("take", X, idx, axis=1), np.take(X, idx, axis=1))
    np.testing.assert_array_equal(run_op("take", X, np.array([[0, 23]], "int32")), np.take(X, [[0, 23]]))
    np.testing.assert_array_equal(run_op("tile", X, repeats=(2, 1, 1, 2)), np.tile(X, (2, 1, 1, 2)))
    np.testing.assert_array_equal(run_op("repeat", X, repeats=2, axis=1), np.repeat(X, 2, axis=1))
    np.testing.assert_array_equal(run_op("repeat", X, repeats=3, axis=None), np.repeat(X, 3))
    np.testing.assert_array_equal(run_op("flip", X, axis=1), np.flip(X, 1))
