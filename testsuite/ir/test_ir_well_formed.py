"""The well-formedness checker: one test per kind of violation, and clean IR passes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irbuild import i64, op, seq, tensor

import irbuild
from relax import ir
from relax.diagnostics import Span
from relax.ir import tir
from relax.ir.visitor import pre_order
from relax.ir.well_formed import check_well_formed


def _messages(node):
    diagnostics = check_well_formed(node)
    assert all(d.severity == "error" for d in diagnostics)
    for d in diagnostics:
        assert d.message[0].islower() and not d.message.endswith("."), d.message
    return [d.message for d in diagnostics]


def _module(*functions, **named):
    return ir.IRModule.from_functions({**{f"f{i}": f for i, f in enumerate(functions)}, **named})


def _func(params, bindings, result, dataflow=False, ret=None):
    return ir.Function(tuple(params), seq(bindings, result, dataflow), ret)


@pytest.mark.parametrize("make", [irbuild.every_node_module, irbuild.module,
                                  lambda: _module(irbuild.add_function(), main=irbuild.symbolic_function())])
def test_clean_ir_has_no_diagnostics(make):
    assert _messages(make()) == []


def test_assert_well_formed_raises_every_diagnostic():
    from relax.diagnostics import DiagnosticError
    from relax.ir import assert_well_formed

    x, y = ir.Var("x"), ir.Var("y")
    bad = _module(_func([x], [ir.VarBinding(y, ir.Call(op("relax.add"), (ir.Var("a"), ir.Var("b"))))], y))
    with pytest.raises(DiagnosticError) as info:
        assert_well_formed(bad)
    assert len(info.value.diagnostics) == 2
    assert_well_formed(irbuild.module())


def test_undefined_relax_variable():
    x, ghost, y = ir.Var("x", tensor((4,))), ir.Var("ghost", tensor((4,))), ir.Var("y")
    span = Span("m.relax", 4, 9)
    binding = ir.VarBinding(y, ir.Call(op("relax.add"), (x, ghost), span=span))
    diagnostics = check_well_formed(_module(_func([x], [binding], y)))
    assert [d.message for d in diagnostics] == ["variable 'ghost' is used but not defined"]
    assert diagnostics[0].span == span


def test_every_violation_is_reported_not_just_the_first():
    x = ir.Var("x")
    a, b, y = ir.Var("a"), ir.Var("b"), ir.Var("y")
    binding = ir.VarBinding(y, ir.Call(op("relax.add"), (a, b)))
    assert _messages(_module(_func([x], [binding], y))) == [
        "variable 'a' is used but not defined", "variable 'b' is used but not defined"]


def test_dataflow_var_used_outside_its_block():
    x = ir.Var("x", tensor((4,)))
    lv = ir.DataflowVar("lv", tensor((4,)))
    body = ir.SeqExpr((ir.DataflowBlock((ir.VarBinding(lv, ir.Call(op("relax.exp"), (x,))),)),), lv)
    assert _messages(_module(ir.Function((x,), body))) == [
        "dataflow variable 'lv' is used outside its dataflow block"]


def test_notes_point_at_the_definition():
    x = ir.Var("x", tensor((4,)))
    lv = ir.DataflowVar("lv", tensor((4,)), span=Span("m.relax", 3, 13))
    body = ir.SeqExpr((ir.DataflowBlock((ir.VarBinding(lv, ir.Call(op("relax.exp"), (x,))),)),), lv)
    [diagnostic] = check_well_formed(_module(ir.Function((x,), body)))
    [note] = diagnostic.notes
    assert (note.severity, note.message, note.span) == ("note", "'lv' is defined here", lv.span)


def test_dataflow_var_defined_outside_a_dataflow_block():
    x = ir.Var("x", tensor((4,)))
    lv = ir.DataflowVar("lv", tensor((4,)))
    func = _func([x], [ir.VarBinding(lv, ir.Call(op("relax.exp"), (x,)))], x)
    assert _messages(_module(func)) == ["dataflow variable 'lv' is defined outside a dataflow block"]


def test_dataflow_var_as_parameter():
    p = ir.DataflowVar("p", tensor((4,)))
    assert _messages(_module(ir.Function((p,), ir.SeqExpr((), p)))) == [
        "parameter 'p' must not be a dataflow variable"]


def test_if_inside_a_dataflow_block():
    cond, x, gv = ir.Var("c", ir.PrimStructInfo("bool")), ir.Var("x"), ir.Var("gv")
    binding = ir.VarBinding(gv, ir.If(cond, ir.SeqExpr((), x), ir.SeqExpr((), x)))
    assert _messages(_module(_func([cond, x], [binding], gv, dataflow=True))) == [
        "an if expression is not allowed inside a dataflow block"]
    assert _messages(_module(_func([cond, x], [binding], gv, dataflow=False))) == []


def test_plain_vars_are_the_outputs_of_a_dataflow_block():
    x = ir.Var("x", tensor((4,)))
    lv, gv = ir.DataflowVar("lv", tensor((4,))), ir.Var("gv", tensor((4,)))
    bindings = [ir.VarBinding(lv, ir.Call(op("relax.exp"), (x,))), ir.VarBinding(gv, lv)]
    assert _messages(_module(_func([x], bindings, gv, dataflow=True))) == []


def test_variable_defined_twice():
    x, y = ir.Var("x"), ir.Var("y")
    bindings = [ir.VarBinding(y, x), ir.VarBinding(y, x)]
    assert _messages(_module(_func([x], bindings, y))) == ["variable 'y' is defined twice"]
    assert _messages(_module(ir.Function((x, x), ir.SeqExpr((), x)))) == ["variable 'x' is defined twice"]


def test_variable_of_an_inner_scope_is_not_visible_after_it():
    cond, x, inner = ir.Var("c", ir.PrimStructInfo("bool")), ir.Var("x"), ir.Var("inner")
    branch = ir.SeqExpr((ir.BindingBlock((ir.VarBinding(inner, x),)),), inner)
    r = ir.Var("r")
    func = _func([cond, x], [ir.VarBinding(r, ir.If(cond, branch, ir.SeqExpr((), x)))], inner)
    assert _messages(_module(func)) == ["variable 'inner' is used but not defined"]


def test_unknown_global_function():
    x, y = ir.Var("x"), ir.Var("y")
    func = _func([x], [ir.VarBinding(y, ir.Call(ir.GlobalVar("missing"), (x,)))], y)
    assert _messages(_module(main=func)) == ["function 'main' refers to unknown function 'missing'"]
    known = _func([x], [ir.VarBinding(y, ir.Call(ir.GlobalVar("kernel"), (x,)))], y)
    assert _messages(_module(main=known, kernel=irbuild.prim_func())) == []


def test_global_symbol_must_match_the_function_name():
    func = irbuild.symbolic_function()  # global_symbol "main"
    assert _messages(_module(main=func)) == []
    assert _messages(_module(other=func)) == ["function 'other' has the global symbol 'main', not its own name"]


def test_call_arity_of_module_functions():
    x, y = ir.Var("x"), ir.Var("y")
    callee = irbuild.add_function()  # two parameters
    caller = _func([x], [ir.VarBinding(y, ir.Call(ir.GlobalVar("add"), (x,)))], y)
    assert _messages(_module(main=caller, add=callee)) == ["function 'add' takes 2 arguments but is called with 1"]
    good = _func([x], [ir.VarBinding(y, ir.Call(ir.GlobalVar("add"), (x, x)))], y)
    assert _messages(_module(main=good, add=callee)) == []


def test_recursive_local_function_is_allowed():
    x, f, y, p, q = ir.Var("x"), ir.Var("f"), ir.Var("y"), ir.Var("p"), ir.Var("q")
    inner = _func([p], [ir.VarBinding(q, ir.Call(f, (p,)))], q)
    func = _func([x], [ir.VarBinding(f, inner), ir.VarBinding(y, ir.Call(f, (x,)))], y)
    assert _messages(_module(func)) == []


def test_symbolic_var_not_defined_by_signature():
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    x, y = ir.Var("x", tensor((n,))), ir.Var("y", tensor((m,)))
    func = _func([x], [ir.VarBinding(y, ir.Call(op("relax.exp"), (x,)))], y)
    assert _messages(_module(main=func)) == [
        "symbolic variable 'm' is not defined by the signature of 'main' or a match_cast"]


def test_symbolic_var_in_a_composite_dimension_is_not_a_definition():
    n = tir.Var("n", "int64")
    x = ir.Var("x", tensor((tir.Mul(n, i64(2)),)))
    assert _messages(_module(main=ir.Function((x,), ir.SeqExpr((), x)))) == [
        "symbolic variable 'n' is not defined by the signature of 'main' or a match_cast"]


def test_match_cast_defines_symbolic_vars():
    m = tir.Var("m", "int64")
    x, y, z = ir.Var("x", tensor((4,))), ir.Var("y", tensor((m,))), ir.Var("z", ir.ShapeStructInfo((m,)))
    bindings = [ir.MatchCast(y, x, tensor((m,))), ir.VarBinding(z, ir.ShapeExpr((m,)))]
    assert _messages(_module(_func([x], bindings, y))) == []


@pytest.mark.parametrize("annotation, value, expected", [
    (tensor((2, 3)), ir.Constant(np.zeros(4, "float32")), 'R.Tensor((2, 3), dtype="float32")'),
    (tensor((4,), "int32"), ir.Constant(np.zeros(4, "float32")), 'R.Tensor((4,), dtype="int32")'),
    (tensor((2,)), ir.ShapeExpr((i64(2),)), 'R.Tensor((2,), dtype="float32")'),
    (ir.TensorStructInfo(None, "float32", 3), ir.Constant(np.zeros((2, 2), "float32")), 'R.Tensor(ndim=3, dtype="float32")'),
    (ir.TupleStructInfo((tensor((4,)),)), ir.Tuple((ir.ShapeExpr(()), ir.ShapeExpr(()))), "R.Tuple("),
    (ir.ShapeStructInfo(ndim=3), ir.ShapeExpr((i64(1), i64(2))), "R.Shape(ndim=3)"),
    (ir.PrimStructInfo("int64"), ir.PrimValue(tir.IntImm("int32", 1)), 'R.Prim("int64")'),
])
def test_annotation_contradicting_its_value(annotation, value, expected):
    x, y = ir.Var("x"), ir.Var("y", annotation)
    messages = _messages(_module(_func([x], [ir.VarBinding(y, value)], y)))
    assert len(messages) == 1 and messages[0].startswith(f"variable 'y' is annotated {expected}"), messages


@pytest.mark.parametrize("annotation, value", [
    (ir.ObjectStructInfo(), ir.Constant(np.zeros(4, "float32"))),
    (ir.TensorStructInfo(None, "void", -1), ir.Constant(np.zeros(4, "float32"))),
    (ir.TensorStructInfo(None, "float32", 1), ir.Constant(np.zeros(4, "float32"))),
    (ir.ShapeStructInfo(ndim=2), ir.ShapeExpr((i64(1), i64(2)))),
    (ir.TupleStructInfo((ir.ObjectStructInfo(), ir.ShapeStructInfo(ndim=0))), ir.Tuple((ir.StringImm("a"), ir.ShapeExpr(())))),
    (tensor((4,)), ir.Call(op("relax.zeros"), ())),
])
def test_compatible_annotations_are_accepted(annotation, value):
    x, y = ir.Var("x"), ir.Var("y", annotation)
    assert _messages(_module(_func([x], [ir.VarBinding(y, value)], y))) == []


def test_annotation_against_a_variable_value_and_return_annotation():
    x = ir.Var("x", tensor((4,)))
    y = ir.Var("y", tensor((2, 2)))
    func = _func([x], [ir.VarBinding(y, x)], x, ret=tensor((5,)))
    assert _messages(_module(main=func)) == [
        'variable \'y\' is annotated R.Tensor((2, 2), dtype="float32") but its value is R.Tensor((4,), dtype="float32")',
        'function \'main\' is annotated to return R.Tensor((5,), dtype="float32") but returns R.Tensor((4,), dtype="float32")',
    ]


@settings(max_examples=40, deadline=None)
@given(irbuild.relax_functions())
def test_random_functions_are_well_formed(func):
    assert _messages(_module(main=func)) == []


@settings(max_examples=40, deadline=None)
@given(irbuild.relax_functions(), st.data())
def test_dropping_a_used_binding_is_reported(func, data):
    block = func.body.blocks[0]
    index = data.draw(st.integers(0, len(block.bindings) - 1))
    dropped = block.bindings[index].var
    kept = block.bindings[:index] + block.bindings[index + 1:]
    body = func.body.with_fields(blocks=(block.with_fields(bindings=kept),) + func.body.blocks[1:])
    still_used = any(node is dropped for node in pre_order(body))
    messages = _messages(_module(main=func.with_fields(body=body)))
    assert messages == ([f"variable '{dropped.name_hint}' is used but not defined"] if still_used else [])


# -- TIR ----------------------------------------------------------------------------


def _prim(body, params=(), buffer_map=()):
    return tir.PrimFunc(tuple(params), body, None, tuple(buffer_map))


def test_tir_undefined_variable():
    i, ghost = tir.Var("i", "int32"), tir.Var("ghost", "int32")
    body = tir.For(i, tir.IntImm("int32", 0), ghost, "serial", tir.Evaluate(tir.Add(i, ghost)))
    assert _messages(_module(k=_prim(body))) == ["variable 'ghost' is used but not defined in 'k'"]


def test_tir_loop_var_used_after_its_loop():
    i = tir.Var("i", "int32")
    zero = tir.IntImm("int32", 0)
    body = tir.SeqStmt((tir.For(i, zero, zero, "serial", tir.Evaluate(i)), tir.Evaluate(i)))
    assert _messages(_module(k=_prim(body))) == ["variable 'i' is used but not defined in 'k'"]


def test_tir_loop_var_redefined():
    i = tir.Var("i", "int32")
    zero, four = tir.IntImm("int32", 0), tir.IntImm("int32", 4)
    inner = tir.For(i, zero, four, "serial", tir.Evaluate(i))
    body = tir.For(i, zero, four, "serial", inner)
    assert _messages(_module(k=_prim(body))) == ["loop variable 'i' is already defined"]
    sequential = tir.SeqStmt((tir.For(i, zero, four, "serial", tir.Evaluate(i)), tir.For(i, zero, four, "serial", tir.Evaluate(i))))
    assert _messages(_module(k=_prim(sequential))) == ["loop variable 'i' is already defined"]


def test_tir_let_var_defined_twice():
    v = tir.Var("v", "int32")
    one = tir.IntImm("int32", 1)
    body = tir.LetStmt(v, one, tir.LetStmt(v, one, tir.Evaluate(v)))
    assert _messages(_module(k=_prim(body))) == ["variable 'v' is defined twice"]


def test_tir_buffer_used_but_not_declared():
    h = tir.Var("h", "handle")
    A = tir.Buffer("A", (i64(4),), "float32", tir.Var("A_data", "handle"))
    stray = tir.Buffer("stray", (i64(4),), "float32", tir.Var("stray_data", "handle"))
    body = tir.BufferStore(A, tir.BufferLoad(stray, (i64(0),)), (i64(0),))
    assert _messages(_module(k=_prim(body, [h], [(h, A)]))) == ["buffer 'stray' is used but not declared in 'k'"]


def test_tir_buffer_backed_by_an_allocate_is_declared():
    ptr = tir.Var("ptr", "handle")
    scratch = tir.Buffer("scratch", (i64(4),), "float32", ptr)
    body = tir.Allocate(ptr, "float32", (i64(4),), tir.IntImm("bool", 1),
                        tir.BufferStore(scratch, tir.FloatImm("float32", 0.0), (i64(0),)))
    assert _messages(_module(k=_prim(body))) == []


def test_tir_symbolic_buffer_shapes_are_defined_by_the_buffer_map():
    n = tir.Var("n", "int64")
    h = tir.Var("h", "handle")
    A = tir.Buffer("A", (n,), "float32", tir.Var("A_data", "handle"))
    i = tir.Var("i", "int64")
    body = tir.For(i, i64(0), n, "serial", tir.BufferStore(A, tir.FloatImm("float32", 0.0), (i,)))
    assert _messages(_module(k=_prim(body, [h], [(h, A)]))) == []


def test_tir_two_sizes_of_one_name_in_the_signature():
    # A reshape kernel legalized after a call that leaked the callee's n: its input buffer's
    # n and the scalar parameter n were different variables, and codegen bound only one.
    n_buffer, n_param = tir.Var("n", "int64"), tir.Var("n", "int64")
    a, b = tir.Var("a", "handle"), tir.Var("b", "handle")
    A = tir.Buffer("A", (n_buffer, i64(4)), "float32", tir.Var("A_data", "handle"))
    B = tir.Buffer("B", (tir.Mul(n_param, i64(4)),), "float32", tir.Var("B_data", "handle"))
    body = tir.Evaluate(tir.Add(n_buffer, n_param))
    assert _messages(_module(k=_prim(body, [a, b, n_param], [(a, A), (b, B)]))) == [
        "the signature of 'k' has two different variables named 'n'"]
    one = tir.Buffer("B", (tir.Mul(n_buffer, i64(4)),), "float32", tir.Var("B_data", "handle"))
    assert _messages(_module(k=_prim(tir.Evaluate(n_buffer), [a, b], [(a, A), (b, one)]))) == []


def test_tir_block_iterators_and_alloc_buffers_are_scoped_to_the_block():
    func = irbuild.prim_func()
    assert _messages(_module(k=func)) == []
    block = func.body.body.block
    C = block.alloc_buffers[0]
    after = tir.SeqStmt((func.body, tir.BufferStore(C, tir.FloatImm("float32", 0.0), (block.iter_vars[0].var,))))
    messages = _messages(_module(k=func.with_fields(body=after)))
    assert messages == ["buffer 'C' is used but not declared in 'k'", "variable 'v_i' is used but not defined in 'k'"]


_ANNOTATED = '''\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((5,), dtype="float32"):
        y: R.Tensor((2, 3), dtype="float32") = x
        z: R.Tensor((2,), dtype="float32") = R.shape([2])
        return x
'''


def test_diagnostics_of_parsed_text_point_at_the_annotations():
    from relax import script
    from relax.diagnostics import DiagnosticError

    try:
        mod = script.parse(_ANNOTATED, "bad.relax")
    except DiagnosticError as error:
        pytest.skip(f"the parser does not read this text: {error}")
    located = [(d.span.line, d.span.column, d.message.split(" is annotated")[0]) for d in check_well_formed(mod)]
    assert located == [(8, 12, "variable 'y'"), (9, 12, "variable 'z'"), (7, 53, "function 'main'")]


def test_tir_call_to_unknown_function():
    call = tir.Evaluate(tir.Call("int32", ir.GlobalVar("helper"), ()))
    assert _messages(_module(k=_prim(call))) == ["function 'k' refers to unknown function 'helper'"]
    assert _messages(_module(k=_prim(call), helper=_prim(tir.Evaluate(i64(0))))) == []


def test_tir_buffer_indexed_with_the_wrong_number_of_indices():
    h = tir.Var("h", "handle")
    A = tir.Buffer("A", (i64(4), i64(4)), "float32", tir.Var("A_data", "handle"))
    body = tir.BufferStore(A, tir.BufferLoad(A, (i64(0), i64(1))), (i64(0),))
    assert _messages(_module(k=_prim(body, [h], [(h, A)]))) == ["buffer 'A' has 2 dimensions but is indexed with 1"]
