"""JSON round trips: structure, sharing, spans, special values, errors."""

import json as std_json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irbuild import tensor

import irbuild
from relax import ir
from relax.diagnostics import Span, UserError
from relax.ir import tir
from relax.ir.json import from_json, to_json
from relax.ir.registry import NODE_CLASSES
from relax.ir.structural import assert_structural_equal
from relax.ir.visitor import pre_order


def _round_trip(node):
    text = to_json(node)
    loaded = from_json(text)
    # Free variables load as new objects, so they are mapped, not compared by identity.
    assert_structural_equal(node, loaded, map_free_vars=True)
    assert to_json(loaded) == text  # deterministic, and nothing lost
    return loaded


def test_every_node_type_round_trips():
    mod = irbuild.every_node_module()
    loaded = _round_trip(mod)
    written = {type(node) for node in pre_order(mod)}
    assert {type(node) for node in pre_order(loaded)} == written
    abstract = {"Node", "Expr", "Binding", "StructInfo", "PrimExpr", "BinaryOp", "CompareOp", "Stmt"}
    assert {cls for cls in NODE_CLASSES.values() if cls.__name__ not in abstract} <= written


def test_sharing_is_preserved():
    mod = _round_trip(irbuild.module())
    main = mod["main"]
    x = main.params[0]
    first_call = main.body.blocks[0].bindings[0].value
    assert first_call.args[0] is x
    kernel = mod["kernel"]
    A = kernel.buffer_map[0][1]
    loads = [node for node in pre_order(kernel) if isinstance(node, tir.BufferLoad) and node.buffer.name == "A"]
    assert loads and all(load.buffer is A for load in loads)
    assert kernel.buffer_map[0][0] is kernel.params[0]


def test_spans_are_kept():
    span = Span("model.relax", 7, 23, 7, 30)
    var = ir.Var("x", tensor((2,)), span=span)
    loaded = from_json(to_json(ir.Function((var,), ir.SeqExpr((), var))))
    assert loaded.params[0].span == span
    assert loaded.span is None


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "bool", "int8", "uint8", "int32", "int64", "uint64"])
def test_constants_of_every_dtype(dtype):
    data = (np.arange(-3, 3).reshape(2, 3) % 2 == 0) if dtype == "bool" else np.arange(6).reshape(2, 3).astype(dtype)
    loaded = _round_trip(ir.Constant(data))
    assert loaded.data.dtype == data.dtype and loaded.data.shape == (2, 3)
    np.testing.assert_array_equal(loaded.data, data)


def test_scalar_and_empty_constants():
    for data in (np.array(3.5, "float32"), np.zeros((0, 4), "float32"), np.array([np.nan, -np.inf], "float16")):
        loaded = _round_trip(ir.Constant(data))
        np.testing.assert_array_equal(loaded.data, data)


def test_special_floats_and_python_values():
    attrs = ir.FrozenDict(
        inf=float("inf"), ninf=float("-inf"), nan=float("nan"), zero=-0.0, big=1e300, tiny=5e-324,
        tuple=(1, 2), list=[1, 2], nested=ir.FrozenDict(a=(1.5,)), none=None, flag=False, text="é\n\"",
        huge=2**80, scalar=np.float32(2.5),
    )
    call = ir.Call(ir.Op("relax.foo"), (), attrs)
    loaded = _round_trip(call).attrs
    assert loaded["inf"] == float("inf") and loaded["ninf"] == float("-inf") and loaded["nan"] != loaded["nan"]
    assert str(loaded["zero"]) == "-0.0" and loaded["big"] == 1e300 and loaded["tiny"] == 5e-324
    assert loaded["tuple"] == (1, 2) and isinstance(loaded["tuple"], tuple)
    assert loaded["list"] == [1, 2] and isinstance(loaded["list"], list)
    assert isinstance(loaded["nested"], ir.FrozenDict) and loaded["nested"]["a"] == (1.5,)
    assert loaded["none"] is None and loaded["flag"] is False and loaded["text"] == "é\n\""
    assert loaded["huge"] == 2**80 and loaded["scalar"] == np.float32(2.5)
    assert isinstance(loaded["scalar"], np.float32)
    assert list(loaded) == list(attrs)


def test_tir_float_immediates():
    for value in (float("nan"), float("inf"), -0.0, 0.1):
        _round_trip(tir.FloatImm("float32", value))


def test_output_is_deterministic_and_versioned():
    text = to_json(irbuild.every_node_module())
    assert text == to_json(irbuild.every_node_module())
    document = std_json.loads(text)
    assert document["format"] == "relax-ir" and document["version"] == 1


@settings(max_examples=40, deadline=None)
@given(irbuild.relax_functions())
def test_random_relax_functions_round_trip(func):
    _round_trip(func)


@settings(max_examples=60, deadline=None)
@given(irbuild.prim_exprs([tir.Var("n", "int64"), tir.Var("m", "int64")]))
def test_random_prim_exprs_round_trip(expr):
    _round_trip(expr)


def _document(**changes):
    document = std_json.loads(to_json(ir.Tuple((ir.StringImm("a"),))))
    document.update(changes)
    return std_json.dumps(document)


@pytest.mark.parametrize("text, message", [
    ("not json", "not valid JSON"),
    ("[1, 2]", "not a relax IR JSON document"),
    ('{"format": "something-else", "version": 1}', "not a relax IR JSON document"),
    (_document(version=99), "version 99 is not supported"),
    (_document(extra=1), "expected exactly"),
    (_document(root={"ref": 5}), "reference 5 is not to an earlier node"),
    (_document(root={"bogus": 1}), "unknown value tag 'bogus'"),
    (_document(nodes=[{"type": "os.system", "fields": {}}]), "unknown node type"),
    (_document(nodes=[{"type": "Var", "fields": {"name_hint": "x"}}]), "do not match"),
    (_document(nodes=[{"type": "Var", "fields": {"name_hint": "x", "struct_info": None}, "span": [1]}]), "a span must be"),
    (_document(nodes=[{"type": "Var", "fields": {"name_hint": "x", "struct_info": None}, "span": [3, 1, 1, 1, 1]}]),
     "a span must be"),
    (_document(sources=[1]), "'sources' must be a list of file names"),
    (_document(nodes=[{"type": "Constant", "fields": {"data": {"ndarray": {"dtype": "object", "shape": [], "data": ""}}}}]),
     "unsupported array dtype"),
    (_document(nodes=[{"type": "Constant", "fields": {"data": {"ndarray": {"dtype": "float32", "shape": [2], "data": "AAAA"}}}}]),
     "array data has 3 bytes"),
    (_document(nodes=[{"type": "Tuple", "fields": {"fields": {"ref": 0}}}]), "reference 0 is not to an earlier node"),
    (_document(nodes=[{"type": "Tuple", "fields": {"fields": 5}}]), "field 'fields' must be a tuple of Expr, not int"),
    (_document(nodes=[{"type": "Var", "fields": {"name_hint": "x", "struct_info": "R.Tensor"}}]),
     "field 'struct_info' must be StructInfo or null, not str"),
    (_document(nodes=[{"type": "tir.Var", "fields": {"name": "n", "dtype": "int64"}},
                      {"type": "tir.PrimFunc", "fields": {"params": {"tuple": []}, "body": {"ref": 0}, "ret_type": None,
                                                          "buffer_map": {"tuple": []}, "attrs": {"frozendict": []}}}]),
     "field 'body' must be Stmt, not Var"),
])
def test_malformed_and_foreign_documents(text, message):
    with pytest.raises(UserError, match=message):
        from_json(text)


def test_absurdly_deep_nesting_is_a_user_error():
    deep = "[" * 200000 + "]" * 200000
    with pytest.raises(UserError):
        from_json(_document(root=std_json.loads('{"tuple": []}')).replace('"root": {"tuple": []}', '"root": ' + deep))


def test_non_ir_values_are_refused_on_write():
    with pytest.raises(TypeError):
        to_json(ir.Call(ir.Op("x"), (), ir.FrozenDict(bad=object())))


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=64).map(lambda b: b.decode("latin-1")))
def test_garbage_never_crashes_with_anything_but_user_error(text):
    try:
        from_json(text)
    except UserError:
        pass
