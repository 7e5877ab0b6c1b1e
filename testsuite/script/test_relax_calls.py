"""Calls: generic operators with attributes, and the special forms TVM represents differently."""

from __future__ import annotations

import math

import numpy as np
from parse_helpers import bindings, function

from relax import ir
from relax.ir import tir


def _values(body: str):
    return [b.value for b in bindings(function(body))]


def test_generic_operator_call_keeps_keywords_as_attrs():
    (conv, perm, clip) = _values('''
        @R.function
        def main(x: R.Tensor((1, 1, 8, 8), "float32"), w: R.Tensor((2, 1, 3, 3), "float32")):
            a = R.nn.conv2d(x, w, strides=[1, 1], padding=(1, 1, 1, 1), data_layout="NCHW", out_dtype="", groups=1)
            b = R.permute_dims(a, axes=None)
            c = R.clip(b, T.float64(0.5), -1.5)
            return c
    ''')
    assert conv.op.name == "relax.nn.conv2d" and len(conv.args) == 2
    assert conv.attrs["strides"] == (1, 1) and conv.attrs["padding"] == (1, 1, 1, 1)
    assert conv.attrs["data_layout"] == "NCHW" and conv.attrs["groups"] == 1
    assert perm.attrs["axes"] is None
    low, high = clip.args[1:]
    assert isinstance(low, ir.PrimValue) and low.value.dtype == "float64" and low.value.value == 0.5
    assert isinstance(high.value, tir.FloatImm) and high.value.value == -1.5 and high.value.dtype == "float64"


def test_positional_literals_become_relax_values():
    (call,) = _values('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            y = R.my_op(x, 3, 2.5, "s", [x, 1], True)
            return y
    ''')
    _, three, half, text, pair, flag = call.args
    assert three.value.dtype == "int64" and three.value.value == 3
    assert half.value.dtype == "float64"
    assert isinstance(text, ir.StringImm) and text.value == "s"
    assert isinstance(pair, ir.Tuple) and pair.fields[0] is not None
    assert flag.value.dtype == "bool"


def test_call_tir_and_inplace():
    call, multi, inplace = _values('''
        @R.function
        def main(x: R.Tensor(("n", 4), "float32")):
            n = T.int64()
            cls = Module
            a = R.call_tir(cls.k, (x,), out_sinfo=R.Tensor((n, 4), dtype="float32"), tir_vars=R.shape([n]))
            b = R.call_tir(cls.k, x, out_sinfo=[R.Tensor((n, 4), "float32"), R.Tensor((4,), "float32")])
            c = R.call_tir_inplace(cls.k, (x, a), inplace_indices=[0, -1], out_sinfo=R.Tensor((n, 4), "float32"))
            return c

        @R.function
        def k(x: R.Tensor(("n", 4), "float32")):
            return x
    ''')
    assert call.op.name == "relax.call_tir"
    callee, args, tir_vars = call.args
    assert isinstance(callee, ir.GlobalVar) and callee.name_hint == "k"
    assert isinstance(args, ir.Tuple) and isinstance(tir_vars, ir.ShapeExpr)
    assert isinstance(call.sinfo_args[0], ir.TensorStructInfo)
    assert isinstance(multi.args[1], ir.Tuple) and len(multi.args[1].fields) == 1
    (out,) = multi.sinfo_args
    assert isinstance(out, ir.TupleStructInfo) and len(out.fields) == 2
    assert inplace.op.name == "relax.call_tir_inplace" and inplace.attrs["inplace_indices"] == (0, -1)


def test_packed_calls():
    dps, packed, pure, builtin = _values('''
        @R.function(pure=False)
        def main(x: R.Tensor((2,), "float32")):
            a = R.call_dps_packed("my.dps", (x,), out_ty=R.Tensor((2,), dtype="float32"))
            b = R.call_packed("my.func", x, 1, sinfo_args=R.Object)
            c = R.call_pure_packed("my.pure", x, ty_args=(R.Tensor((2,), dtype="float32"),))
            d = R.call_builtin_with_ctx("vm.builtin.alloc_storage", (R.shape([8]),), sinfo_args=[R.Any])
            return d
    ''')
    assert dps.op.name == "relax.call_dps_packed" and dps.args[0].global_symbol == "my.dps"
    assert isinstance(packed.op, ir.ExternFunc) and packed.op.global_symbol == "my.func"
    assert len(packed.args) == 2 and isinstance(packed.sinfo_args[0], ir.ObjectStructInfo)
    assert pure.op.name == "relax.call_pure_packed" and isinstance(pure.args[0], ir.ExternFunc)
    assert isinstance(builtin.args[0], ir.ExternFunc) and isinstance(builtin.args[1], ir.Tuple)


def test_constants():
    values = _values('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            a = R.const(1.5, "float32")
            b = R.const(-3, "int64")
            c = R.const([[1, 2], [3, 4]], "int32")
            d = R.const("inf", "float32")
            e = R.const(float("-inf"), "float16")
            f = R.const(nan, "float32")
            g = R.const(True, "bool")
            h = R.const(2.0)
            return x
    ''')
    a, b, c, d, e, f, g, h = (v.data for v in values)
    assert a.dtype == np.float32 and a == 1.5 and a.shape == ()
    assert b.dtype == np.int64 and b == -3
    assert c.shape == (2, 2) and c.dtype == np.int32 and c[1, 0] == 3
    assert math.isinf(d) and d > 0 and math.isinf(e) and e < 0 and e.dtype == np.float16
    assert math.isnan(f) and g.dtype == np.bool_ and h.dtype == np.float32


def test_value_forms():
    shape, prim, prim_sym, string, dtype, extern, null = _values('''
        @R.function
        def main(x: R.Tensor(("n",), "float32")):
            n = T.int64()
            a = R.shape([n, 4, "n + 1"])
            b = R.prim_value(T.int32(7))
            c = R.prim_value(n)
            d = R.str("hi")
            e = R.dtype("float16")
            f = R.ExternFunc("my.f")
            g = R.null_value()
            return x
    ''')
    n, four, n_plus_one = shape.values
    assert isinstance(n, tir.Var) and four.value == 4 and isinstance(n_plus_one, tir.Add)
    assert prim.value.dtype == "int32" and prim_sym.value is n
    assert string.value == "hi" and dtype.value == "float16" and extern.global_symbol == "my.f"
    assert isinstance(null, ir.Call) and null.op.name == "relax.null_value"


def test_spans_point_at_source():
    func = function('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            y = R.add(x, x)
            return y
    ''')
    (binding,) = bindings(func)
    assert binding.value.span.line == 10 and binding.value.span.column == 13
    assert binding.var.span.column == 9
    assert func.params[0].span.source == "test.relax"


def test_python_operators_on_relax_values_are_operator_calls():
    add, less, negative = _values('''
        @R.function
        def main(x: R.Tensor((2,), "float32"), y: R.Tensor((2,), "float32")):
            a = x + y
            b = x < y
            c = -x
            return c
    ''')
    assert add.op.name == "relax.add" and less.op.name == "relax.less" and negative.op.name == "relax.negative"


def test_index_map_attribute():
    (call,) = _values('''
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            y = R.layout_transform(x, index_map=T.index_map(lambda a, b: (b, a * 2)), pad_value=None)
            return y
    ''')
    mapping = call.attrs["index_map"]
    a, b = mapping["initial_indices"]
    first, second = mapping["final_indices"]
    assert first is b and isinstance(second, tir.Mul) and second.a is a


def test_dps_calls_take_out_sinfo_by_position():
    tir_call, dps, cast = bindings(function('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            a = R.call_tir(Module.main, (x,), R.Tensor((2,), "float32"), R.shape([2]))
            b = R.call_dps_packed("f", (a,), R.Tensor((2,), "float32"))
            c = R.match_cast(value=b, ty=R.Tensor((2,), "float32"))
            return c
    '''))
    assert isinstance(tir_call.value.sinfo_args[0], ir.TensorStructInfo)
    assert isinstance(tir_call.value.args[2], ir.ShapeExpr)
    assert isinstance(dps.value.sinfo_args[0], ir.TensorStructInfo)
    assert isinstance(cast, ir.MatchCast) and cast.value is dps.var and cast.struct_info.ndim == 1
