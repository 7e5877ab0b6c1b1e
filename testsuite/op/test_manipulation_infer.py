"""Struct-info inference and errors of the manipulation operators."""

import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")


def i64(v):
    return v if isinstance(v, tir.PrimExpr) else tir.IntImm("int64", v)


def tensor(dims, dtype="float32"):
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(tuple(i64(d) for d in dims)), dtype))


def shape(*dims):
    return ir.ShapeExpr(tuple(i64(d) for d in dims))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [d.value if isinstance(d, tir.IntImm) else d for d in info.shape_values]


def test_reshape_infers_minus_one_and_checks_sizes():
    assert dims(infer("reshape", tensor((2, 3, 4)), shape(4, -1))) == [4, 6]
    with pytest.raises(DiagnosticError, match=r"cannot reshape \(2, 3\) \(6 elements\) to \(4, 2\) \(8 elements\)"):
        infer("reshape", tensor((2, 3)), shape(4, 2))


def test_reshape_symbolic():
    info = infer("reshape", tensor((N, 4)), shape(N, 2, 2))
    assert dims(info) == [N, 2, 2]


def test_permute_dims():
    assert dims(infer("permute_dims", tensor((N, 3, 4)), axes=(2, 0, 1))) == [4, N, 3]
    assert dims(infer("permute_dims", tensor((2, 3)))) == [3, 2]
    with pytest.raises(DiagnosticError, match="not a permutation of 2 dimensions"):
        infer("permute_dims", tensor((2, 3)), axes=(0, 0))


def test_concat_split_stack():
    pair = ir.Tuple((tensor((2, 3)), tensor((5, 3))))
    assert dims(infer("concat", pair, axis=0)) == [7, 3]
    with pytest.raises(DiagnosticError, match="differ outside axis 1"):
        infer("concat", pair, axis=1)
    pieces = infer("split", tensor((6, 4)), indices_or_sections=3, axis=0)
    assert [dims(f) for f in pieces.fields] == [[2, 4]] * 3
    pieces = infer("split", tensor((6, 4)), indices_or_sections=(1, 5), axis=0)
    assert [dims(f) for f in pieces.fields] == [[1, 4], [4, 4], [1, 4]]
    with pytest.raises(DiagnosticError, match="does not split into 4 equal sections"):
        infer("split", tensor((6, 4)), indices_or_sections=4)
    assert dims(infer("stack", ir.Tuple((tensor((2, 3)), tensor((2, 3)))), axis=1)) == [2, 2, 3]


def test_expand_squeeze_flatten_take_tile():
    assert dims(infer("expand_dims", tensor((2, 3)), axis=(0, 3))) == [1, 2, 3, 1]
    assert dims(infer("squeeze", tensor((1, 2, 1)))) == [2]
    with pytest.raises(DiagnosticError, match="cannot squeeze axis 1 of size 2"):
        infer("squeeze", tensor((1, 2, 1)), axis=(1,))
    assert dims(infer("flatten", tensor((2, 3, 4)))) == [24]
    assert dims(infer("take", tensor((5, 6)), tensor((2, 3), "int64"), axis=1)) == [5, 2, 3]
    assert dims(infer("tile", tensor((2, 3)), repeats=(2, 1, 2))) == [2, 2, 6]
    assert dims(infer("broadcast_to", tensor((3, 1)), shape(2, 3, 4))) == [2, 3, 4]
    with pytest.raises(DiagnosticError, match=r"cannot broadcast \(3, 2\) to \(3, 4\)"):
        infer("broadcast_to", tensor((3, 2)), shape(3, 4))


@pytest.mark.parametrize("op, attrs, bad", [
    ("permute_dims", {"axes": (1, -0.0)}, "axes"),
    ("expand_dims", {"axis": 0.0}, "axis"),
    ("split", {"indices_or_sections": 2.0, "axis": 1}, "indices_or_sections"),
])
def test_a_float_where_an_axis_or_count_is_expected_is_an_error(op, attrs, bad):
    """`axes=[1, -0.0]` reached inference as a float index: a TypeError, exit 70 (issue 16)."""
    with pytest.raises(DiagnosticError) as caught:
        infer(op, tensor((2, 4)), **attrs)
    assert caught.value.diagnostics[0].message == (
        f"R.{op}: bad value {attrs[bad]!r} for '{bad}': expected None, an int or a list of ints")


def test_strided_slice_axis_out_of_range_is_an_error():
    # A rank-0 input once divided by its rank (ZeroDivisionError); a too-large axis wrapped.
    with pytest.raises(DiagnosticError, match="axis 1 is out of range for a tensor of rank 0"):
        infer("strided_slice", tensor(()), shape(1), shape(0), shape(1), shape(1))
    with pytest.raises(DiagnosticError, match="axis 5 is out of range for a tensor of rank 3"):
        infer("strided_slice", tensor((2, 3, 4)), shape(5), shape(0), shape(1), shape(1))
    with pytest.raises(DiagnosticError, match="axis -1 is sliced more than once"):
        infer("strided_slice", tensor((2, 3)), shape(1, -1), shape(0, 0), shape(1, 1), shape(1, 1))


def test_zero_sizes_that_would_divide_are_errors():
    with pytest.raises(DiagnosticError, match=r"cannot infer the -1 in \(0, -1\)"):
        infer("reshape", tensor((2, 4)), shape(0, -1))
    with pytest.raises(DiagnosticError, match="number of sections must be positive, got 0"):
        infer("split", tensor((6, 4)), indices_or_sections=0, axis=0)
