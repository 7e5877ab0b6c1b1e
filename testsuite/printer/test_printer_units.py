"""Printer unit tests on IR built directly: names, literals, precedence, order, speed."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from relax import ir
from relax.ir import tir
from relax.ir.structural import assert_structural_equal
from relax.script import parse, script
from relax.script import printer_doc as doc


def i64(value: int) -> tir.IntImm:
    return tir.IntImm("int64", value)


def tensor(*shape: int, dtype: str = "float32") -> ir.TensorStructInfo:
    return ir.TensorStructInfo(ir.ShapeExpr(tuple(i64(d) for d in shape)), dtype)


def relax_function(params, bindings, result, ret=None, name="main", dataflow=False, **kwargs):
    block = (ir.DataflowBlock if dataflow else ir.BindingBlock)(tuple(bindings))
    attrs = ir.FrozenDict({"global_symbol": name})
    return ir.Function(tuple(params), ir.SeqExpr((block,), result), ret, attrs=attrs, **kwargs)


def add(a, b):
    return ir.Call(ir.Op("relax.add"), (a, b))


# -- literals ---------------------------------------------------------------------------
@pytest.mark.parametrize("value, text", [
    (2.5, "2.5"), (1.0, "1.0"), (-0.0, "-0.0"), (0.1, "0.10000000000000001"),
    (1e20, "100000000000000000000.0"), (1e-05, "1.0000000000000001e-05"),
    (math.inf, '"inf"'), (-math.inf, '"-inf"'), (math.nan, '"nan"'),
])
def test_float_literals_follow_tvm(value, text):
    assert doc.float_text(value) == text


def test_string_literals_escape_quotes_and_newlines():
    assert doc.string_text('say "hi"\n') == '"say \\"hi\\"\\n"'


# -- PrimExpr precedence ------------------------------------------------------------------
def _prim(expr) -> str:
    return script(expr).strip()


def test_prim_expr_parenthesization():
    a, b, c = (tir.Var(n, "int32") for n in "abc")
    assert _prim(tir.Mul(tir.Add(a, b), c)) == "(a + b) * c"
    assert _prim(tir.Sub(tir.Sub(a, b), c)) == "a - b - c"
    assert _prim(tir.Sub(a, tir.Sub(b, c))) == "a - (b - c)"
    assert _prim(tir.FloorMod(tir.FloorDiv(a, b), c)) == "a // b % c"
    assert _prim(tir.FloorDiv(a, tir.Mul(b, c))) == "a // (b * c)"
    assert _prim(tir.Or(tir.And(tir.LT(a, b), tir.NE(b, c)), tir.Not(tir.LE(a, c)))) == "a < b and b != c or not a <= c"


def test_prim_expr_call_forms():
    a = tir.Var("a", "int32")
    f = tir.Var("f", "float32")
    assert _prim(tir.Add(tir.IntImm("int32", 1), tir.IntImm("int32", 2))) == "T.Add(1, 2)"
    assert _prim(tir.Div(a, tir.IntImm("int32", 3))) == "T.Div(a, 3)"
    assert _prim(tir.Div(f, tir.FloatImm("float32", 2.0))) == "f / T.float32(2.0)"
    assert _prim(tir.Mod(a, tir.IntImm("int32", 5))) == "T.truncmod(a, 5)"
    assert _prim(tir.Cast("float32", tir.IntImm("int64", 3))) == 'T.Cast("float32", T.int64(3))'
    assert _prim(tir.Call("float32", "tir.exp", (f,))) == "T.exp(f)"
    assert _prim(tir.Call("int32", "tir.shift_left", (a, tir.IntImm("int32", 2)))) == "a << 2"


# -- names --------------------------------------------------------------------------------
def test_distinct_variables_with_one_name_are_told_apart():
    x0 = ir.Var("x", tensor(2))
    x1 = ir.Var("x", tensor(2))
    x2 = ir.Var("x", tensor(2))
    func = relax_function([x0], [ir.VarBinding(x1, add(x0, x0)), ir.VarBinding(x2, add(x1, x0))], x2, tensor(2))
    text = script(ir.IRModule.from_functions({"main": func}))
    assert "x_1: R.Tensor((2,), dtype=\"float32\") = R.add(x, x)" in text
    assert "x_2: R.Tensor((2,), dtype=\"float32\") = R.add(x_1, x)" in text
    assert_structural_equal(parse(text), ir.IRModule.from_functions({"main": func}))


def test_names_are_sanitized_and_reused_across_functions():
    first = ir.Var("a.b", tensor(2))
    second = ir.Var("a.b", tensor(2))
    module = ir.IRModule.from_functions({
        "f": relax_function([first], [], first, tensor(2), name="f"),
        "g": relax_function([second], [], second, tensor(2), name="g"),
    })
    text = script(module)
    assert text.count("def f(a_b: ") == 1 and text.count("def g(a_b: ") == 1


# -- constants ----------------------------------------------------------------------------
def test_non_finite_scalar_constants_read_back():
    x = ir.Var("x", tensor())
    values = [ir.const(v, "float32") for v in (math.inf, -math.inf, math.nan)]
    bindings = [ir.VarBinding(ir.Var(f"c{i}", tensor()), value) for i, value in enumerate(values)]
    func = relax_function([x], bindings, bindings[-1].var, tensor())
    text = script(ir.IRModule.from_functions({"main": func}))
    assert 'R.const("inf", "float32")' in text and 'R.const("-inf", "float32")' in text
    assert 'R.const("nan", "float32")' in text
    reparsed = parse(text)["main"].body.blocks[0].bindings
    assert math.isinf(reparsed[0].value.data[()]) and reparsed[1].value.data[()] < 0
    assert math.isnan(reparsed[2].value.data[()])


def test_tensor_constants_print_inline_and_read_back():
    data = np.arange(6, dtype="int32").reshape(2, 3)
    x = ir.Var("x", tensor(2, 3, dtype="int32"))
    y = ir.Var("y", tensor(2, 3, dtype="int32"))
    func = relax_function([x], [ir.VarBinding(y, add(x, ir.Constant(data)))], y, tensor(2, 3, dtype="int32"))
    text = script(ir.IRModule.from_functions({"main": func}))
    assert 'R.const([[0, 1, 2], [3, 4, 5]], "int32")' in text
    constant = parse(text)["main"].body.blocks[0].bindings[0].value.args[1]
    np.testing.assert_array_equal(constant.data, data)


# -- module layout ------------------------------------------------------------------------
def _prim_func(name: str) -> tir.PrimFunc:
    a = tir.Var("A", "handle")
    buffer = tir.Buffer("A", (tir.IntImm("int32", 4),), "float32", data=tir.Var("A", "handle"))
    i = tir.Var("i", "int32")
    store = tir.BufferStore(buffer, tir.FloatImm("float32", 0.0), (i,))
    body = tir.For(i, tir.IntImm("int32", 0), tir.IntImm("int32", 4), "serial", store)
    return tir.PrimFunc((a,), body, buffer_map=((a, buffer),), attrs=ir.FrozenDict({"global_symbol": name}))


def test_function_order_and_determinism():
    x = ir.Var("x", tensor(4))
    main = relax_function([x], [], x, tensor(4))
    helper = relax_function([ir.Var("y", tensor(4))], [], ir.Tuple(()), name="helper")
    one = ir.IRModule.from_functions({"main": main, "zero": _prim_func("zero"), "helper": helper})
    two = ir.IRModule.from_functions({"helper": helper, "main": main, "zero": _prim_func("zero")})
    text = script(one)
    assert text == script(two) == script(one)
    assert text.index("def zero(") < text.index("def helper(") < text.index("def main(")
    assert "# from tvm.script import tirx as T" in text


def test_prim_func_prints_as_tvm_does():
    text = script(_prim_func("zero"))
    assert text == (
        "# from tvm.script import tirx as T\n"
        "# from tvm.tirx.layout import Axis\n\n"
        "@T.prim_func\n"
        'def zero(A: T.Buffer((4,), "float32")):\n'
        "    for i in range(4):\n"
        "        A[i] = T.float32(0.0)\n"
    )


def test_private_functions_and_foreign_global_symbols():
    x = ir.Var("x", tensor(2))
    private = ir.Function((x,), ir.SeqExpr((), x), tensor(2))
    renamed = relax_function([ir.Var("y", tensor(2))], [], ir.Tuple(()), name="exported")
    text = script(ir.IRModule.from_functions({"p": private, "q": renamed}))
    assert "@R.function(private=True)\n    def p(" in text
    assert 'R.func_attr({"global_symbol": "exported"})' in text


def test_call_tir_binding_hides_the_annotation_it_repeats():
    x = ir.Var("x", tensor(4))
    y = ir.Var("y", tensor(4))
    call = ir.Call(ir.Op("relax.call_tir"), (ir.GlobalVar("zero"), ir.Tuple((x,))), sinfo_args=(tensor(4),))
    main = relax_function([x], [ir.VarBinding(y, call)], y, tensor(4))
    text = script(ir.IRModule.from_functions({"main": main, "zero": _prim_func("zero")}))
    assert '        cls = Module\n        y = R.call_tir(cls.zero, (x,), out_ty=R.Tensor((4,), dtype="float32"))\n' in text


def test_fragments_print_on_their_own():
    assert script(tensor(2, 3)).strip() == 'R.Tensor((2, 3), dtype="float32")'
    assert script(ir.ShapeStructInfo(ndim=2)).strip() == "R.Shape(ndim=2)"
    assert script(ir.ObjectStructInfo()).strip() == "R.Any"
    assert repr(ir.ShapeExpr((i64(2), i64(3)))) == "ShapeExpr(R.shape([2, 3]))"
    i = tir.Var("i", "int32")
    buffer = tir.Buffer("A", (tir.IntImm("int32", 4),), "float32")
    two = tir.IntImm("int32", 2)
    assert script(tir.BufferRegion(buffer, (tir.Range(i, two),))).strip() == "A[i:i + 2]"
    assert script(tir.Range(tir.IntImm("int32", 0), two)).strip() == "I.Range(0, 2)"
    assert script(tir.BufferLoad(buffer, (tir.Ramp(i, two, 4),))).strip() == "A[i:i + 8:2]"
    scalar = tir.Buffer("S", (), "float32")
    assert script(tir.BufferStore(scalar, tir.BufferLoad(scalar, ()), ())).strip() == "S[()] = S[()]"


def test_printing_a_megabyte_module_is_fast():
    x = ir.Var("x", tensor(16, 16))
    bindings, previous = [], x
    for index in range(14000):
        var = ir.Var(f"lv{index}", tensor(16, 16))
        bindings.append(ir.VarBinding(var, add(previous, x)))
        previous = var
    module = ir.IRModule.from_functions({"main": relax_function([x], bindings, previous, tensor(16, 16))})
    start = time.perf_counter()
    text = script(module)
    elapsed = time.perf_counter() - start
    assert len(text) >= 1_000_000
    assert elapsed < 1.0, f"printing {len(text)} bytes took {elapsed:.2f}s"


def test_float_tensor_constants_keep_non_finite_values():
    data = np.array([[0.5, math.inf], [math.nan, -math.inf]], dtype="float32")
    x = ir.Var("x", tensor(2, 2))
    y = ir.Var("y", tensor(2, 2))
    func = relax_function([x], [ir.VarBinding(y, add(x, ir.Constant(data)))], y, tensor(2, 2))
    text = script(ir.IRModule.from_functions({"main": func}))
    assert 'R.const([[0.5, "inf"], ["nan", "-inf"]], "float32")' in text
    constant = parse(text)["main"].body.blocks[0].bindings[0].value.args[1]
    np.testing.assert_array_equal(constant.data, data)  # equal_nan: nan positions must match


def test_a_relax_variable_named_as_a_signature_size_prints_under_another_name():
    # The size prints as the module's TypeVar `n`; a parameter or binding printed as `n` too
    # hid it, and the text did not read back ("'n' is not a TIR expression").
    source = '''
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(n: R.Tensor(("n",), "float32"), x: R.Tensor(("m",), "float32")) -> R.Tensor(("n",), "float32"):
        m = R.add(n, n)
        return m
'''
    module = parse(source, "clash.relax")
    printed = script(module)
    assert "def main(n_1: R.Tensor((n,), dtype=\"float32\"), x: R.Tensor((m,)" in printed
    assert "m_1 = R.add(n_1, n_1)" in printed
    reparsed = parse(printed, "clash.relax (printed)")
    assert_structural_equal(reparsed, module, map_free_vars=True)
    assert script(reparsed) == printed
