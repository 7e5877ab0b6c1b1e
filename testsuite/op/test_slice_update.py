"""slice_scatter and reverse_sequence: struct info (static and symbolic shapes),
located errors, and the legalized kernels against numpy (exact: they only move
float32 values)."""

import numpy as np
import pytest

from numeric import run_op
from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")
X = np.arange(24, dtype="float32").reshape(2, 3, 4)


def tensor(dims, dtype="float32"):
    dims = tuple(tir.IntImm("int64", d) if isinstance(d, int) else d for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def prim(value):
    return ir.PrimValue(tir.IntImm("int64", value))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def test_shapes():
    info = infer("slice_scatter", tensor((N, 8)), tensor((N, 2)), prim(0), prim(4), prim(2), axis=1)
    assert info.shape_values[0] is N and info.shape_values[1].value == 8
    info = infer("reverse_sequence", tensor((N, 5)), tensor((N,), "int32"), seq_axis=1, batch_axis=0)
    assert info.shape_values[0] is N and info.dtype == "float32"


@pytest.mark.parametrize("op, args, attrs, message", [
    ("slice_scatter", ((4, 8), (4, 3), 0, 4, 2), {"axis": 1},
     "src has 3 elements at axis 1 but the slice 0:4:2 of input holds 2"),
    ("slice_scatter", ((4, 8), ((4, 2), "float16"), 0, 4, 2), {"axis": 1}, "src must have the data type of input"),
    ("slice_scatter", ((4, 8), (4, 2), 0, 4, 0), {"axis": 1}, "step must be positive, got 0"),
    ("slice_scatter", ((4, 8), (4, 2), 0, 4, 2), {"axis": 2}, "axis 2 is out of range"),
    ("reverse_sequence", ((4, 8), ((5,), "int64")), {}, r"seq_lengths \(5,\) must have one length per entry"),
    ("reverse_sequence", ((4, 8), ((4,), "float32")), {}, "seq_lengths must be int32 or int64, got float32"),
    ("reverse_sequence", ((4, 8), ((4,), "int64")), {"seq_axis": 0}, "seq_axis and batch_axis must differ"),
])
def test_errors(op, args, attrs, message):
    values = [prim(a) if isinstance(a, int) else tensor(*a) if isinstance(a[0], tuple) else tensor(a) for a in args]
    with pytest.raises(DiagnosticError, match=message):
        infer(op, *values, **attrs)


@pytest.mark.parametrize("start, end, step, axis", [(1, 4, 2, 2), (-2, 10, 1, 1), (0, 1, 1, 0)])
def test_slice_scatter(start, end, step, axis):
    expected = X.copy()
    view = expected[(slice(None),) * axis + (slice(start, end, step),)]
    src = -np.arange(view.size, dtype="float32").reshape(view.shape) - 1
    view[...] = src
    got = run_op("slice_scatter", X, src, prim(start), prim(end), prim(step), axis=axis)
    np.testing.assert_array_equal(got, expected)


def reverse_sequence_reference(data, lengths, seq_axis, batch_axis):
    out = np.moveaxis(data.copy(), (batch_axis, seq_axis), (0, 1))
    for b, length in enumerate(lengths):
        length = min(int(length), out.shape[1])
        out[b, :length] = out[b, :length][::-1].copy()
    return np.moveaxis(out, (0, 1), (batch_axis, seq_axis))


@pytest.mark.parametrize("lengths, seq_axis, batch_axis", [([3, 9], 2, 0), ([2, 1, 0], 0, 1)])
def test_reverse_sequence(lengths, seq_axis, batch_axis):
    lengths = np.array(lengths, "int32")
    got = run_op("reverse_sequence", X, lengths, seq_axis=seq_axis, batch_axis=batch_axis)
    np.testing.assert_array_equal(got, reverse_sequence_reference(X, lengths, seq_axis, batch_axis))
