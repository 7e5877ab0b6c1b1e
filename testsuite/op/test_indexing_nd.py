"""gather_nd, scatter_nd, index_tensor and index_put: struct info (static and
symbolic shapes), located errors, and the legalized kernels against numpy (exact:
they only move or add a few float32 values)."""

import numpy as np
import pytest

from numeric import run_op
from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")
RNG = np.random.default_rng(7)
X = np.arange(24, dtype="float32").reshape(2, 3, 4)


def tensor(dims, dtype="float32"):
    dims = tuple(tir.IntImm("int64", d) if isinstance(d, int) else d for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [d.value if isinstance(d, tir.IntImm) else d.name for d in info.shape_values]


def test_shapes():
    assert dims(infer("gather_nd", tensor((N, 3, 4)), tensor((5, 2), "int64"))) == [5, 4]
    assert dims(infer("gather_nd", tensor((2, 3, 4)), tensor((2, 5, 1), "int64"), batch_dims=1)) == [2, 5, 4]
    assert dims(infer("scatter_nd", tensor((N, 3)), tensor((5, 1), "int32"), tensor((5, 3)))) == ["n", 3]
    indices = ir.Tuple((tensor((N, 1), "int64"), tensor((3,), "int32")))
    assert dims(infer("index_tensor", tensor((5, 6, 7)), indices)) == ["n", 3, 7]
    put = infer("index_put", tensor((5, 6)), indices, tensor((3,)), accumulate=True)
    assert dims(put) == [5, 6] and put.dtype == "float32"


@pytest.mark.parametrize("op, args, attrs, message", [
    ("gather_nd", ((2, 3), ((4, 1), "int32")), {}, "indices must be int64, got int32"),
    ("gather_nd", ((2, 3), ((4, 3), "int64")), {}, r"indices \(4, 3\) name 3 axes but data has 2"),
    ("scatter_nd", ((2, 3), ((4, 1), "int64"), (4, 2)), {}, r"updates .* must have shape \(4, 3\), got \(4, 2\)"),
    ("scatter_nd", ((2, 3), ((4, 1), "int64"), ((4, 3), "float16")), {}, "updates must have the data type"),
    ("scatter_nd", ((2, 3), ((4, 1), "int64"), (4, 3)), {"reduction": "avg"}, "reduction must be one of"),
])
def test_nd_errors(op, args, attrs, message):
    values = [tensor(*a) if isinstance(a[0], tuple) else tensor(a) for a in args]
    with pytest.raises(DiagnosticError, match=message):
        infer(op, *values, **attrs)


def test_index_errors():
    with pytest.raises(DiagnosticError, match="cannot broadcast"):
        infer("index_tensor", tensor((5, 6)), ir.Tuple((tensor((2,), "int64"), tensor((3,), "int64"))))
    with pytest.raises(DiagnosticError, match="index tensor 0 must have an integer data type"):
        infer("index_tensor", tensor((5, 6)), ir.Tuple((tensor((2,)),)))
    with pytest.raises(DiagnosticError, match="3 index tensors for data of rank 2"):
        infer("index_tensor", tensor((5, 6)), ir.Tuple((tensor((2,), "int64"),) * 3))
    with pytest.raises(DiagnosticError, match="1 index tensors for data of rank 2: give one per axis"):
        infer("index_put", tensor((5, 6)), ir.Tuple((tensor((2,), "int64"),)), tensor((2,)))
    with pytest.raises(DiagnosticError, match=r"values \(3,\) do not broadcast to the index shape \(2,\)"):
        infer("index_put", tensor((5, 6)), ir.Tuple((tensor((2,), "int64"),) * 2), tensor((3,)))


def gather_nd_reference(data, indices, batch_dims=0):
    rows = indices.reshape(-1, indices.shape[-1])
    batch = data.reshape((-1,) + data.shape[batch_dims:]) if batch_dims else data[None]
    per_batch = rows.shape[0] // batch.shape[0]
    out = [batch[r // per_batch][tuple(row)] for r, row in enumerate(rows)]
    return np.array(out).reshape(indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:])


def test_gather_nd():
    indices = np.array([[-1, 0], [1, 2], [0, -3]], "int64")
    np.testing.assert_array_equal(run_op("gather_nd", X, indices), gather_nd_reference(X, indices))
    batched = np.array([[[2], [0]], [[1], [1]]], "int64")
    np.testing.assert_array_equal(run_op("gather_nd", X, batched, batch_dims=1),
                                  gather_nd_reference(X, batched, batch_dims=1))


@pytest.mark.parametrize("reduction", ["update", "add", "max"])
def test_scatter_nd(reduction):
    indices = np.array([[0, 1], [1, -1], [0, 1]], "int32")
    updates = RNG.standard_normal((3, 4)).astype("float32")
    expected = X.copy()
    for row, update in zip(indices, updates):
        target = tuple(row)
        expected[target] = {"update": update, "add": expected[target] + update,
                            "max": np.maximum(expected[target], update)}[reduction]
    np.testing.assert_array_equal(run_op("scatter_nd", X, indices, updates, reduction=reduction), expected)


def test_index_tensor():
    rows, cols = np.array([[0], [1]], "int64"), np.array([2, 0, -1], "int32")
    np.testing.assert_array_equal(run_op("index_tensor", X, [rows, cols]), X[rows, cols])
    np.testing.assert_array_equal(run_op("index_tensor", X, [np.array([1, 0, 1], "int64")]), X[[1, 0, 1]])


def test_index_put():
    index = [np.array([0, 1, 0], "int64"), np.array([1, 2, 1], "int64"), np.array([-1, 0, 3], "int64")]
    values = np.array([100, 200, 300], "float32")
    added = X.copy()
    np.add.at(added, tuple(index), values)
    np.testing.assert_array_equal(run_op("index_put", X, index, values, accumulate=True), added)
    rows, cols = np.array([[0], [1]], "int64"), np.array([0, 3], "int64")
    flat = X[0]
    replaced = flat.copy()
    replaced[rows, cols] = np.float32(-5)
    np.testing.assert_array_equal(run_op("index_put", flat, [rows, cols], np.array([-5], "float32")), replaced)
