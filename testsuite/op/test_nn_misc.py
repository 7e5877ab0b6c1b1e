"""R.nn.pad and R.nn.dropout: inference, attribute checks, and legalized kernels
against numpy (np.pad; exact comparisons, the kernels only move values)."""

import numpy as np
import pytest

from numeric import run_op
from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")
RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 3, 4)).astype("float32")


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [d.value if isinstance(d, tir.IntImm) else d for d in info.shape_values]


def test_pad_shapes():
    assert dims(infer("nn.pad", tensor((2, 3, 4)), pad_width=(0, 0, 1, 2, 2, 1))) == [2, 6, 7]
    n, three = dims(infer("nn.pad", tensor((N, 3)), pad_width=(1, 1, 0, 0)))
    assert three == 3 and n.script().strip() == "n + T.int64(2)"


@pytest.mark.parametrize("attrs, message", [
    ({"pad_width": (1, 1)}, "pad_width needs 2 values per axis \\(6 for rank 3\\), got 2 in R.nn.pad"),
    ({"pad_width": (1, -1, 0, 0, 0, 0)}, "must not be negative"),
    ({"pad_width": (1, 1, 0, 0, 0, 0), "pad_mode": "edge"}, "numpy's 'edge' is 'replicate'"),
    ({"pad_width": (1, 1, 0, 0, 0, 0), "pad_mode": "wrap"}, "expected one of constant, reflect, replicate, circular"),
    ({}, "R.nn.pad needs attribute 'pad_width'"),
])
def test_pad_errors(attrs, message):
    with pytest.raises(DiagnosticError, match=message):
        infer("nn.pad", tensor((2, 3, 4)), **attrs)


def test_reflect_needs_two_elements():
    with pytest.raises(DiagnosticError, match="cannot reflect axis 0 of size 1"):
        infer("nn.pad", tensor((1, 3)), pad_width=(1, 0, 0, 0), pad_mode="reflect")


def numpy_pad_widths(flat):
    return [(flat[2 * a], flat[2 * a + 1]) for a in range(len(flat) // 2)]


@pytest.mark.parametrize("pad_width, pad_value", [((0, 0, 1, 2, 2, 1), 0.0), ((1, 0, 1, 2, 2, 1), 1.5)])
def test_pad_constant(pad_width, pad_value):
    expected = np.pad(X, numpy_pad_widths(pad_width), constant_values=pad_value)
    np.testing.assert_array_equal(run_op("nn.pad", X, pad_width=pad_width, pad_value=pad_value), expected)


@pytest.mark.parametrize("mode, numpy_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
@pytest.mark.parametrize("pad_width", [(1, 0, 1, 2, 2, 1), (1, 1, 2, 2, 3, 3)])
def test_pad_modes(mode, numpy_mode, pad_width):
    expected = np.pad(X, numpy_pad_widths(pad_width), mode=numpy_mode)
    np.testing.assert_array_equal(run_op("nn.pad", X, pad_width=pad_width, pad_mode=mode), expected)


def test_reflect_wider_than_the_input():
    x = np.arange(5, dtype="float32")
    np.testing.assert_array_equal(run_op("nn.pad", x, pad_width=(7, 9), pad_mode="reflect"),
                                  np.pad(x, (7, 9), mode="reflect"))


def test_pad_int_tensor():
    x = np.arange(6, dtype="int32").reshape(2, 3)
    np.testing.assert_array_equal(run_op("nn.pad", x, pad_width=(1, 0, 0, 2), pad_value=7),
                                  np.pad(x, ((1, 0), (0, 2)), constant_values=7))


def test_dropout_is_identity_with_a_mask_of_ones():
    info = infer("nn.dropout", tensor((N, 4)), rate=0.3)
    assert isinstance(info, ir.TupleStructInfo) and len(info.fields) == 2
    assert all(dims(f) == [N, 4] for f in info.fields)
    output, mask = run_op("nn.dropout", X, rate=0.3)
    np.testing.assert_array_equal(output, X)
    np.testing.assert_array_equal(mask, np.ones_like(X))
    with pytest.raises(DiagnosticError, match="expected a number in \\[0, 1\\)"):
        infer("nn.dropout", tensor((2,)), rate=1.5)
