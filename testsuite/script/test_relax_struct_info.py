"""Struct info annotations, in the spellings of TVM 0.27 and of older user code."""

from __future__ import annotations

import pytest
from parse_helpers import errors, function

from relax import ir
from relax.ir import tir


def _param_infos(signature: str, prelude: str = "") -> list:
    func = function(f'''
        @R.function
        def main({signature}):
            {prelude}
            return R.tuple()
    ''')
    return [p.struct_info for p in func.params]


def test_tensor_forms():
    full, positional, ndim_only, unknown, bare, scalar = _param_infos(
        'a: R.Tensor((2, 3), dtype="float32"), b: R.Tensor((2, 3), "int8"), c: R.Tensor(dtype="float16", ndim=2),'
        ' d: R.Tensor(ndim=-1), e: R.Tensor, f: R.Tensor((), "bool")'
    )
    assert full.dtype == "float32" and full.ndim == 2 and isinstance(full.shape, ir.ShapeExpr)
    assert positional.dtype == "int8" and [d.value for d in positional.shape_values] == [2, 3]
    assert ndim_only.shape is None and ndim_only.ndim == 2 and ndim_only.dtype == "float16"
    assert unknown.ndim == -1 and unknown.dtype == "void"
    assert bare.ndim == -1 and bare.shape is None
    assert scalar.ndim == 0 and scalar.shape_values == ()


def test_tensor_with_shape_variable_and_vdevice():
    func = function('''
        @R.function
        def main(s: R.Shape(ndim=2), x: R.Tensor((2,), "float32", vdevice="llvm:0")):
            y: R.Tensor(s, dtype="float32") = R.reshape(x, s)
            return y
    ''')
    s, x = func.params
    assert x.struct_info.vdevice == "llvm:0"
    assert func.body.blocks[0].bindings[0].var.struct_info.shape is s


def test_shape_prim_object_forms():
    shape, ndim, bare, empty, prim, prim_value, prim_new, obj, any_, string = _param_infos(
        's: R.Shape([n, 4]), t: R.Shape(ndim=3), u: R.Shape, v: R.Shape([]), p: R.Prim("int64"),'
        ' q: R.Prim(value=n), r: T.float32, o: R.Object, a: R.Any, st: I.StringType()',
        prelude="n = T.int64()",
    )
    n = shape.values[0]
    assert isinstance(n, tir.Var) and shape.ndim == 2
    assert ndim.values is None and ndim.ndim == 3 and bare.ndim == -1
    assert empty.values == () and empty.ndim == 0
    assert prim.dtype == "int64" and prim.value is None
    assert prim_value.value is n and prim_value.dtype == "int64"
    assert prim_new.dtype == "float32"
    assert all(isinstance(info, ir.ObjectStructInfo) for info in (obj, any_, string))


def test_tuple_and_callable_forms():
    pair, listed, empty, nested, func_info, opaque, impure = _param_infos(
        'a: R.Tuple(R.Tensor((2,), "float32"), R.Prim("int64")), b: R.Tuple([R.Object, R.Shape]), c: R.Tuple,'
        ' d: R.Tuple(R.Tuple(R.Any)),'
        ' f: R.Callable((R.Tensor((2,), "float32"),), R.Tensor((2,), "float32"), True),'
        ' g: R.Callable, h: R.Callable(ret=R.Shape, purity=False)'
    )
    assert [type(f) for f in pair.fields] == [ir.TensorStructInfo, ir.PrimStructInfo]
    assert [type(f) for f in listed.fields] == [ir.ObjectStructInfo, ir.ShapeStructInfo]
    assert empty.fields == () and isinstance(nested.fields[0], ir.TupleStructInfo)
    assert len(func_info.params) == 1 and isinstance(func_info.ret, ir.TensorStructInfo) and func_info.purity
    assert opaque.params is None and isinstance(opaque.ret, ir.ObjectStructInfo)
    assert impure.params is None and impure.purity is False and isinstance(impure.ret, ir.ShapeStructInfo)


def test_low_precision_and_vector_dtypes():
    fp8, vector = _param_infos('a: R.Tensor((2,), "float8_e4m3fn"), b: R.Tensor((2,), "float32x4")')
    assert fp8.dtype == "float8_e4m3fn" and vector.dtype == "float32x4"


@pytest.mark.parametrize(
    "annotation, message",
    [
        ('R.Tensor((2.5,), "float32")', "a dimension must be an int64 value, not float32"),
        ('R.Tensor((2,), "float32", ndim=2)', "ndim=2 does not match the 1 dimensions of the shape"),
        ("R.Shape(4)", "the values of R.Shape must be a list of dimensions such as [n, 4]"),
        ("R.Prim(value=1.5, dtype='int64')", "the value of R.Prim has type float32, not int64"),
        ("R.Callable(R.Tensor, R.Tensor)", "the parameters of R.Callable must be a tuple of struct infos"),
        ("R.Callable((), R.Tensor, 1)", "purity must be True or False"),
        ("R.Object(1)", "R.Object takes at most 0 positional arguments, got 1"),
        ("R.Tensor(shape=(2,), layout='NC')", "R.Tensor has no argument 'layout'"),
        ("R.Tensor(q)", "undefined variable 'q'"),
        ("R.Tensor((T.int32(4),))", "a dimension must be an int64 value, not int32"),
        ("R.Tensor((2,), 'float32', 7)", 'expected a virtual device such as "llvm:0"'),
        ('R.Tensor(("n * ",), "float32")', "'n * ' is not a shape expression"),
    ],
)
def test_malformed_struct_info(annotation, message):
    found = errors(f'''
        @R.function
        def main(x: {annotation}):
            return x
    ''')
    assert [m for _, _, m in found] == [message]
