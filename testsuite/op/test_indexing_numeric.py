"""cumsum, gather_elements, scatter_elements, one_hot and einsum against numpy."""

import numpy as np
import pytest

from numeric import run_op

RNG = np.random.default_rng(3)
X = RNG.standard_normal((3, 4)).astype("float32")


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum(axis):
    np.testing.assert_allclose(run_op("cumsum", X, axis=axis), np.cumsum(X, axis), rtol=1e-5, atol=1e-6)
    exclusive = np.cumsum(X, axis) - X
    np.testing.assert_allclose(run_op("cumsum", X, axis=axis, exclusive=True), exclusive, rtol=1e-5, atol=1e-5)


def test_cumsum_dtype_and_flat():
    ints = np.arange(6, dtype="int32")
    np.testing.assert_array_equal(run_op("cumsum", ints, axis=0, dtype="int64"), np.cumsum(ints).astype("int64"))
    np.testing.assert_array_equal(run_op("cumsum", ints, axis=None), np.cumsum(ints))


def test_gather_and_scatter_elements():
    idx = np.array([[0, 2, 1, -1], [3, 0, 0, 1], [1, 1, 2, 3]], "int64")
    np.testing.assert_array_equal(run_op("gather_elements", X, idx, axis=1), np.take_along_axis(X, idx % 4, 1))
    updates = RNG.standard_normal((3, 4)).astype("float32")
    rows = np.array([[0, 1, 2, 0], [2, 0, 1, 1], [1, 2, 0, 2]], "int32")
    expected = X.copy()
    np.put_along_axis(expected, rows, updates, 0)
    np.testing.assert_array_equal(run_op("scatter_elements", X, rows, updates, axis=0), expected)
    added = X.copy()
    for (i, j), r in np.ndenumerate(rows):
        added[r, j] += updates[i, j]
    np.testing.assert_allclose(run_op("scatter_elements", X, rows, updates, axis=0, reduction="add"), added, rtol=1e-6)


def test_one_hot():
    idx = np.array([0, 2, 1, 3], "int32")
    on, off = np.array(5.0, "float32"), np.array(-1.0, "float32")
    expected = np.where(np.eye(4, dtype=bool)[idx], 5.0, -1.0).astype("float32")
    np.testing.assert_array_equal(run_op("one_hot", idx, on, off, depth=4, axis=-1), expected)
    np.testing.assert_array_equal(run_op("one_hot", idx, on, off, depth=4, axis=0), expected.T)


@pytest.mark.parametrize("subscripts, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]), ("ii->i", [(4, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("i,j", [(3,), (4,)]), ("ij,ij->", [(3, 4), (3, 4)]),
])
def test_einsum(subscripts, shapes):
    operands = [RNG.standard_normal(s).astype("float32") for s in shapes]
    expected = np.einsum(subscripts, *operands)
    np.testing.assert_allclose(run_op("einsum", operands, subscripts=subscripts), expected, rtol=1e-5, atol=1e-5)


def test_cumprod():
    x = np.array([[1, 2, 3], [4, 5, 6]], "float32")
    np.testing.assert_allclose(run_op("cumprod", x, axis=1), np.cumprod(x, axis=1))
    exclusive = np.concatenate([np.ones((2, 1), "float32"), np.cumprod(x, axis=1)[:, :-1]], axis=1)
    np.testing.assert_allclose(run_op("cumprod", x, axis=1, exclusive=True), exclusive)
