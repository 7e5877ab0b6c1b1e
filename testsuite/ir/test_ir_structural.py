"""Structural equality and hashing: alpha-renaming, negative cases, hash consistency."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from irbuild import i64, tensor

import irbuild
from relax import ir
from relax.diagnostics import Span
from relax.ir import tir
from relax.ir.structural import assert_structural_equal, structural_equal, structural_hash


def _equal(a, b, **kwargs):
    result = structural_equal(a, b, **kwargs)
    if result:
        assert structural_hash(a) == structural_hash(b)
    return result


def test_alpha_renamed_relax_functions_are_equal():
    assert _equal(irbuild.add_function("x", "y"), irbuild.add_function("a", "b"))


def test_swapped_arguments_are_not_equal():
    # f(x, y) = x + y against f(a, b) = b + a: the parameters map x->a, y->b.
    assert not _equal(irbuild.add_function("x", "y"), irbuild.add_function("a", "b", swap=True))
    assert structural_hash(irbuild.add_function()) != structural_hash(irbuild.add_function(swap=True))


def test_alpha_renamed_symbolic_shapes_are_equal():
    assert _equal(irbuild.symbolic_function("n"), irbuild.symbolic_function("batch"))
    assert not _equal(irbuild.symbolic_function(dtype="float32"), irbuild.symbolic_function(dtype="float16"))


def test_symbolic_vars_must_map_consistently():
    def f(same: bool):
        n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
        x = ir.Var("x", tensor((n, m)))
        y = ir.Var("y", tensor((n, n) if same else (n, m)))
        return ir.Function((x, y), ir.SeqExpr((), x))

    assert _equal(f(True), f(True))
    assert not _equal(f(True), f(False))


def test_alpha_renamed_tir_loops_and_buffers_are_equal():
    assert _equal(irbuild.prim_func("i", "A"), irbuild.prim_func("k", "Input"))
    assert not _equal(irbuild.prim_func(), irbuild.prim_func(extent=32))
    assert not _equal(irbuild.prim_func(), irbuild.prim_func(swap_store=True))


def test_buffers_map_like_variables():
    def func(second_is_first: bool):
        a, b = tir.Var("a", "handle"), tir.Var("b", "handle")
        A = tir.Buffer("A", (i64(4),), "float32", tir.Var("A_data", "handle"))
        B = tir.Buffer("B", (i64(4),), "float32", tir.Var("B_data", "handle"))
        target = A if second_is_first else B
        body = tir.BufferStore(target, tir.BufferLoad(A, (i64(0),)), (i64(0),))
        return tir.PrimFunc((a, b), body, None, ((a, A), (b, B)))

    assert _equal(func(True), func(True))
    assert not _equal(func(True), func(False))


def test_whole_modules_are_equal_when_rebuilt():
    assert _equal(irbuild.every_node_module(), irbuild.every_node_module())
    assert _equal(irbuild.module(), irbuild.module())


def test_function_order_in_a_module_does_not_matter():
    a = ir.IRModule.from_functions({"f": irbuild.add_function(), "g": irbuild.prim_func()})
    b = ir.IRModule.from_functions({"g": irbuild.prim_func(), "f": irbuild.add_function()})
    assert _equal(a, b)
    c = ir.IRModule.from_functions({"f2": irbuild.add_function(), "g": irbuild.prim_func()})
    assert not _equal(a, c)


@pytest.mark.parametrize("left, right", [
    (ir.Constant(np.array([1.0, 2.0], "float32")), ir.Constant(np.array([1.0, 2.0], "float64"))),
    (ir.const(np.array([1.0, 2.0], "float32")), ir.const(np.array([[1.0, 2.0]], "float32"))),
    (ir.const(np.array([1.0, 2.0], "float32")), ir.const(np.array([1.0, 2.5], "float32"))),
    (tir.FloatImm("float32", 0.0), tir.FloatImm("float32", -0.0)),
    (tir.IntImm("int32", 1), tir.IntImm("int64", 1)),
    (tir.IntImm("int32", 1), tir.FloatImm("int32", 1.0)),
    (ir.Op("relax.add"), ir.Op("relax.subtract")),
    (ir.GlobalVar("f"), ir.GlobalVar("g")),
    (tensor((2, 3)), tensor((3, 2))),
    (tensor((2, 3)), tensor((2, 3), "float16")),
    (ir.TensorStructInfo(None, "float32", 2), ir.TensorStructInfo(None, "float32", 3)),
    (ir.Call(ir.Op("relax.sum"), (), ir.FrozenDict(axis=1)), ir.Call(ir.Op("relax.sum"), (), ir.FrozenDict(axis=2))),
    (ir.Call(ir.Op("relax.sum"), (), ir.FrozenDict(keep=True)), ir.Call(ir.Op("relax.sum"), (), ir.FrozenDict(keep=1))),
    (ir.Call(ir.Op("relax.sum"), (), ir.FrozenDict(a=1)), ir.Call(ir.Op("relax.sum"), (), ir.FrozenDict(b=1))),
    (ir.Tuple((ir.StringImm("a"),)), ir.Tuple((ir.StringImm("a"), ir.StringImm("a")))),
    (ir.Var("x", tensor((2,))), ir.DataflowVar("x", tensor((2,)))),
])
def test_different_leaves_are_not_equal(left, right):
    assert not structural_equal(left, right, map_free_vars=True)
    assert structural_hash(left) != structural_hash(right)


def test_equal_leaves_and_special_floats():
    nan = float("nan")
    assert _equal(ir.const(np.array([nan, 1.0], "float32")), ir.const(np.array([nan, 1.0], "float32")))
    assert _equal(tir.FloatImm("float32", nan), tir.FloatImm("float32", nan))
    assert _equal(ir.GlobalVar("f"), ir.GlobalVar("f"))
    assert _equal(ir.Call(ir.Op("a"), (), ir.FrozenDict(a=1, b=2)), ir.Call(ir.Op("a"), (), ir.FrozenDict(b=2, a=1)))


def test_spans_are_ignored():
    a = ir.Var("x", tensor((2,)), span=Span("a.relax", 1, 1))
    b = ir.Var("x", tensor((2,)), span=Span("b.relax", 9, 9))
    func_a = ir.Function((a,), ir.SeqExpr((), a), span=Span("a.relax", 1, 1))
    func_b = ir.Function((b,), ir.SeqExpr((), b))
    assert _equal(func_a, func_b)


def test_free_vars_compare_by_identity_unless_mapped():
    x, y = ir.Var("x"), ir.Var("y")
    add = ir.Op("relax.add")
    assert _equal(ir.Call(add, (x, x)), ir.Call(add, (x, x)))
    assert not structural_equal(ir.Call(add, (x, x)), ir.Call(add, (y, y)))
    assert structural_equal(ir.Call(add, (x, x)), ir.Call(add, (y, y)), map_free_vars=True)
    # Mapping is consistent: x->y then x->x contradicts it.
    assert not structural_equal(ir.Call(add, (x, x)), ir.Call(add, (y, x)), map_free_vars=True)
    n, m = tir.Var("n"), tir.Var("m")
    assert not structural_equal(tir.Add(n, n), tir.Add(n, m), map_free_vars=True)
    assert structural_equal(tir.Add(n, m), tir.Add(m, n), map_free_vars=True)


def test_free_symbolic_vars_in_a_module_compare_by_identity():
    def module(n):
        # n is used in a shape value, not introduced by any struct info: it is free.
        x = ir.Var("x", tensor((4,)))
        y = ir.Var("y")
        func = ir.Function((x,), irbuild.seq([ir.VarBinding(y, ir.Call(ir.Op("relax.reshape"), (x, ir.ShapeExpr((n,)))))], y))
        return ir.IRModule.from_functions({"main": func})

    n = tir.Var("n", "int64")
    assert _equal(module(n), module(n))
    assert not structural_equal(module(n), module(tir.Var("n", "int64")))
    assert structural_equal(module(n), module(tir.Var("n", "int64")), map_free_vars=True)


def test_attribute_dicts_bind_their_own_tir_vars():
    def layout_call():
        a, b = tir.Var("a", "int64"), tir.Var("b", "int64")
        index_map = ir.FrozenDict(initial_indices=(a, b), final_indices=(b, a))
        return ir.Call(ir.Op("relax.layout_transform"), (), ir.FrozenDict(index_map=index_map))

    assert _equal(layout_call(), layout_call())


def test_tir_let_and_loop_vars_are_bound():
    def let(name):
        v = tir.Var(name, "int32")
        return tir.Let(v, tir.IntImm("int32", 3), tir.Mul(v, v))

    assert _equal(let("a"), let("b"))
    v, w = tir.Var("v", "int32"), tir.Var("w", "int32")
    mixed = tir.Let(v, tir.IntImm("int32", 3), tir.Mul(v, w))
    assert not structural_equal(let("a"), mixed, map_free_vars=True)


def test_assert_structural_equal_reports_path_and_both_sides():
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(irbuild.add_function(), irbuild.add_function(swap=True))
    message = str(info.value)
    assert "root.body.blocks[0].bindings[0].value.args[0]" in message
    assert "lhs:" in message and "rhs:" in message
    assert_structural_equal(irbuild.add_function("p", "q"), irbuild.add_function())


def test_assert_structural_equal_on_different_lengths():
    with pytest.raises(AssertionError, match=r"fields"):
        assert_structural_equal(ir.Tuple((ir.StringImm("a"),)), ir.Tuple((ir.StringImm("a"), ir.StringImm("b"))))


def test_hash_is_stable_across_calls_and_copies():
    mod = irbuild.every_node_module()
    assert structural_hash(mod) == structural_hash(mod) == structural_hash(irbuild.every_node_module())
    assert isinstance(structural_hash(mod), int)


@settings(max_examples=40, deadline=None)
@given(irbuild.relax_functions())
def test_random_functions_equal_themselves_and_their_mutated_copies(func):
    from relax.ir.visitor import ExprMutator

    class Rename(ExprMutator):
        def visit_var_def(self, var):
            if isinstance(var, ir.DataflowVar):
                return ir.DataflowVar(var.name_hint + "_r", var.struct_info)
            return super().visit_var_def(var)

    renamed = Rename().visit(func)
    assert _equal(func, renamed)


@settings(max_examples=40, deadline=None)
@given(irbuild.relax_functions(), st.data())
def test_changing_one_operator_breaks_equality(func, data):
    from relax.ir.analysis import collect
    from relax.ir.visitor import Mutator

    ops = collect(func, lambda node: isinstance(node, ir.Op))
    assume(ops)
    target = data.draw(st.sampled_from(ops))

    class Rename(Mutator):
        def visit_Op(self, node):
            return ir.Op(node.name + "_changed") if node is target else node

    changed = Rename().visit(func)
    assert not structural_equal(func, changed)
    assert structural_hash(func) != structural_hash(changed)


@settings(max_examples=60, deadline=None)
@given(irbuild.prim_exprs([tir.Var("n", "int64"), tir.Var("m", "int64")]),
       irbuild.prim_exprs([tir.Var("n", "int64"), tir.Var("m", "int64")]))
def test_hash_agrees_with_equality_on_random_prim_exprs(a, b):
    if structural_equal(a, b, map_free_vars=True):
        assert structural_hash(a) == structural_hash(b)
    assert structural_equal(a, a) and structural_hash(a) == structural_hash(a)


def test_linear_on_a_large_module():
    # 10k bindings (about the IR of a 1 MB text): a quadratic walk would take minutes,
    # the linear one well under a second on an idle machine.
    import time

    def chain(names):
        x = ir.Var(names, tensor((4,)))
        bindings, last = [], x
        for index in range(10000):
            var = ir.Var(f"{names}{index}", tensor((4,)))
            bindings.append(ir.VarBinding(var, ir.Call(ir.Op("relax.exp"), (last,))))
            last = var
        return ir.Function((x,), irbuild.seq(bindings, last))

    a, b = chain("a"), chain("b")
    start = time.perf_counter()
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    assert time.perf_counter() - start < 10.0
