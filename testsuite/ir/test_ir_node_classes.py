"""IR node classes (ir/node.py): immutable, identity-compared dataclasses whose __init__
takes the fields in declaration order and `span` by keyword only."""

import dataclasses

import numpy as np
import pytest

from relax.ir import expr as rx
from relax.ir import tir
from relax.ir.node import Node, node
from relax.ir.struct_info import ShapeStructInfo, TensorStructInfo


def test_fields_positional_then_span_by_keyword():
    n = tir.Var("n", "int64")
    assert (n.name, n.dtype, n.span) == ("n", "int64", None)
    assert tir.Var("m").dtype == "int32"  # a default
    add = tir.Add(n, tir.IntImm("int64", 1), span="here")
    assert add.a is n and add.b.value == 1 and add.span == "here"
    assert tir.Add.__match_args__ == ("a", "b")
    with pytest.raises(TypeError):
        tir.Add(n, n, "here")  # span is keyword-only
    with pytest.raises(TypeError):
        tir.Add(n)


def test_nodes_cannot_be_changed():
    n = tir.Var("n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        n.name = "m"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del n.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        n.cache = 1  # not a field either
    assert n.name == "n"


def test_identity_equality_and_hash():
    a, b = tir.Var("x"), tir.Var("x")
    assert a != b and a == a and len({a, b}) == 2


def test_post_init_runs_on_construction_and_replace():
    info = TensorStructInfo(rx.ShapeExpr((tir.IntImm("int64", 2), tir.IntImm("int64", 3))), "float32")
    assert info.ndim == 2
    assert ShapeStructInfo((tir.IntImm("int64", 4),)).ndim == 1
    assert tir.FloatImm("float32", 1).value == 1.0 and isinstance(tir.FloatImm("float32", 1).value, float)
    constant = rx.Constant(np.zeros(3, np.float32))
    assert not constant.data.flags.writeable
    assert dataclasses.replace(tir.FloatImm("float32", 0.5), value=2).value == 2.0


def test_dataclasses_functions_see_the_fields():
    add = tir.Add(tir.Var("a"), tir.Var("b"))
    assert [f.name for f in dataclasses.fields(add)] == ["span", "a", "b"]
    other = dataclasses.replace(add, b=add.a)
    assert other.b is add.a and other.a is add.a and type(other) is tir.Add
    assert add.with_fields(a=add.b).a is add.b


def test_a_new_node_class():
    @node
    class Pair(Node):
        first: object
        second: object = 0

    @node
    class Triple(Pair):
        third: str = "z"

    assert (Pair(1).first, Pair(1).second) == (1, 0)
    triple = Triple(1, 2, "c", span="s")
    assert (triple.first, triple.second, triple.third, triple.span) == (1, 2, "c", "s")
    assert Triple(1).third == "z"
    with pytest.raises(TypeError):

        @node
        class Bad(Pair):
            needed: int  # no default after fields with defaults
