"""Visitor, Mutator and the analysis helpers built on them."""

import irbuild
from irbuild import i64

from relax import ir
from relax.ir import tir
from relax.ir.analysis import bound_vars, collect, free_symbolic_vars, free_vars, substitute
from relax.ir.registry import NODE_CLASSES
from relax.ir.visitor import ExprMutator, ExprVisitor, Mutator, Visitor, children, post_order, pre_order


class _Counter(Visitor):
    def __init__(self):
        super().__init__()
        self.seen = []

    def visit_BinaryOp(self, node):
        self.seen.append(type(node).__name__)
        self.generic_visit(node)


def test_dispatch_falls_back_to_base_class_methods():
    n = tir.Var("n", "int64")
    counter = _Counter()
    counter.visit(tir.Add(tir.Mul(n, n), tir.LT(n, i64(3))))
    assert counter.seen == ["Add", "Mul", "LT"]


def test_relax_var_method_does_not_catch_tir_vars():
    class Names(Visitor):
        def __init__(self):
            super().__init__()
            self.relax, self.tir = [], []

        def visit_Var(self, var):
            self.relax.append(var.name_hint)
            self.generic_visit(var)

        def visit_tir_Var(self, var):
            self.tir.append(var.name)

    names = Names()
    names.visit(irbuild.symbolic_function())
    assert "x" in names.relax and "n" not in names.relax
    assert set(names.tir) == {"n", "m"}


def test_generic_visit_reaches_every_node():
    mod = irbuild.every_node_module()
    types = {type(node) for node in pre_order(mod)}
    concrete = {cls for key, cls in NODE_CLASSES.items() if not _is_abstract(cls)}
    assert concrete <= types, sorted(c.__name__ for c in concrete - types)


def _is_abstract(cls):
    return cls.__name__ in {"Node", "Expr", "Binding", "StructInfo", "PrimExpr", "BinaryOp", "CompareOp", "Stmt"}


def test_pre_and_post_order():
    n = tir.Var("n", "int64")
    expr = tir.Add(n, i64(1))
    assert pre_order(expr) == [expr, n, expr.b]
    assert post_order(expr) == [n, expr.b, expr]
    assert children(expr) == [n, expr.b]


def test_pre_order_is_the_order_of_a_recursive_walk():
    # pre_order walks an explicit stack; nested tuples (buffer_map pairs) and FrozenDict
    # values (annotations) must come out as the recursive Visitor reaches them.
    from relax.ir.visitor import walk

    marker = tir.Var("m", "int64")
    loop = tir.For(tir.Var("i", "int64"), i64(0), i64(4), "serial", tir.Evaluate(i64(0)),
                   annotations=ir.FrozenDict(extent=marker, kind="x", pair=(i64(1), (marker, i64(2)))))
    for root in (irbuild.every_node_module(), irbuild.module(), irbuild.prim_func(), loop):
        walked = []
        walk(root, pre=walked.append)
        found = pre_order(root)
        assert len(found) == len(walked) and all(a is b for a, b in zip(found, walked))


def test_walks_share_one_dispatch_table():
    # Each walk used to define a visitor class of its own, whose handlers were looked up
    # anew for every node type, and kept: a table growing with every walk.
    from relax.ir import visitor

    expr = tir.Add(tir.Var("n", "int64"), i64(1))
    post_order(expr)
    size = len(visitor._HANDLER_NAMES)
    post_order(expr)
    assert len(visitor._HANDLER_NAMES) == size


def test_buffer_map_pairs_are_children():
    func = irbuild.prim_func()
    kids = children(func)
    assert func.buffer_map[0][1] in kids and func.buffer_map[0][0] in kids


def test_identity_mutator_returns_the_same_objects():
    for node in (irbuild.every_node_module(), irbuild.module(), irbuild.prim_func()):
        assert Mutator().visit(node) is node
        assert ExprMutator().visit(node) is node


def test_mutator_rebuilds_only_the_changed_path():
    func = irbuild.add_function()

    class AddToMul(Mutator):
        def visit_Op(self, node):
            return ir.Op("relax.multiply") if node.name == "relax.add" else node

    new = AddToMul().visit(func)
    assert new is not func
    assert new.body.blocks[0].bindings[0].value.op.name == "relax.multiply"
    assert new.params is func.params
    assert new.ret_struct_info is func.ret_struct_info
    assert new.body.blocks[0].bindings[0].var is func.body.blocks[0].bindings[0].var


def test_mutator_keeps_shared_nodes_shared():
    func = irbuild.prim_func()

    class RenameBuffers(Mutator):
        def visit_Buffer(self, buffer):
            return buffer.with_fields(name=buffer.name + "_r")

    new = RenameBuffers().visit(func)
    A = new.buffer_map[0][1]
    assert A.name == "A_r"
    loads = collect(new, lambda node: isinstance(node, tir.BufferLoad))
    assert any(load.buffer is A for load in loads)
    assert all(load.buffer.name.endswith("_r") for load in loads)


def test_mutator_handles_frozendict_values():
    marker = tir.Var("m", "int64")
    node = tir.For(tir.Var("i", "int64"), i64(0), i64(4), "serial", tir.Evaluate(i64(0)),
                   annotations=ir.FrozenDict(extent=marker, kind="x"))

    class Replace(Mutator):
        def visit_tir_Var(self, var):
            return i64(7) if var is marker else var

    new = Replace().visit(node)
    assert new.annotations["extent"].value == 7 and new.annotations["kind"] == "x"
    assert new.loop_var is node.loop_var and new.body is node.body


def test_expr_visitor_tells_definitions_from_uses():
    class Recorder(ExprVisitor):
        def __init__(self):
            super().__init__()
            self.events = []

        def visit_var_def(self, var):
            self.events.append(("def", getattr(var, "name_hint", getattr(var, "name", None))))
            super().visit_var_def(var)

        def visit_var_use(self, var):
            self.events.append(("use", getattr(var, "name_hint", getattr(var, "name", None))))

    recorder = Recorder()
    recorder.visit(irbuild.add_function())
    relax_events = [e for e in recorder.events if e[1] in ("x", "y", "z")]
    assert relax_events == [("def", "x"), ("def", "y"), ("use", "x"), ("use", "y"), ("def", "z"), ("use", "z")]

    recorder = Recorder()
    recorder.visit(irbuild.prim_func())
    assert recorder.events.index(("def", "i")) < recorder.events.index(("use", "i"))
    assert ("def", "v_i") in recorder.events and ("def", "t") in recorder.events


def test_expr_mutator_renames_definitions_and_their_uses():
    class Rename(ExprMutator):
        def visit_var_def(self, var):
            if isinstance(var, ir.Var):
                return ir.Var(var.name_hint + "_new", var.struct_info)
            return var

    func = irbuild.add_function()
    new = Rename().visit(func)
    x, y = new.params
    assert x.name_hint == "x_new"
    call = new.body.blocks[0].bindings[0].value
    assert call.args == (x, y)
    assert new.body.body is new.body.blocks[0].bindings[0].var


def test_free_and_bound_vars():
    func = irbuild.add_function()
    assert free_vars(func) == []
    assert [v.name_hint for v in bound_vars(func)] == ["x", "y", "z"]
    call = func.body.blocks[0].bindings[0].value
    assert free_vars(call) == list(func.params)


def test_free_symbolic_vars():
    func = irbuild.symbolic_function()
    assert free_symbolic_vars(func) == []
    x = func.params[0]
    assert [v.name for v in free_symbolic_vars(ir.Call(ir.Op("relax.exp"), (x,)))] == ["n"]
    n = x.struct_info.shape.values[0]
    assert free_symbolic_vars(ir.ShapeExpr((n,))) == [n]
    assert free_symbolic_vars(irbuild.prim_func()) == []
    a, b = tir.Var("a", "int64"), tir.Var("b", "int64")
    index_map = ir.FrozenDict(initial_indices=(a, b), final_indices=(b, a))
    layout = ir.Call(ir.Op("relax.layout_transform"), (x,), ir.FrozenDict(index_map=index_map))
    assert [v.name for v in free_symbolic_vars(layout)] == ["n"]


def test_all_vars_and_global_vars():
    from relax.ir import all_global_vars, all_vars

    mod = irbuild.every_node_module()
    assert all_global_vars(mod) == ["kernel"]
    names = [v.name_hint for v in all_vars(mod["main"])]
    assert names[:4] == ["x", "shp", "flag", "size"] and "lv" in names and len(names) == len(set(names))


def test_collect_is_distinct_and_in_pre_order():
    func = irbuild.add_function()
    names = [v.name_hint for v in collect(func, lambda node: isinstance(node, ir.Var))]
    assert names == ["x", "y", "z"]


def test_substitute_relax_and_tir_vars():
    func = irbuild.symbolic_function()
    n = func.params[0].struct_info.shape.values[0]
    new = substitute(func, {n: i64(8)})
    x = new.params[0]
    assert x.struct_info.shape.values[0].value == 8
    first_call = new.body.blocks[0].bindings[0].value
    assert first_call.args[0] is x
    assert new.ret_struct_info.shape.values[0].value == 8

    add = irbuild.add_function()
    x, y = add.params
    call = add.body.blocks[0].bindings[0].value
    swapped = substitute(call, {x: y})
    assert swapped.args == (y, y)
    assert substitute(call, {}) is call
    unrelated = ir.Var("other")
    assert substitute(call, {unrelated: x}) is call


def test_deeply_nested_expressions_do_not_hit_the_recursion_limit():
    from relax.ir import from_json, structural_equal, to_json

    n = tir.Var("n", "int64")
    expr = n
    for index in range(3000):
        expr = tir.Add(expr, i64(index))
    assert len(pre_order(expr)) == 6001
    assert Mutator().visit(expr) is expr
    assert structural_equal(from_json(to_json(expr)), expr, map_free_vars=True)


def test_subclasses_need_not_call_the_base_init():
    class Count(Visitor):
        def __init__(self):
            self.vars = 0

        def visit_tir_Var(self, var):
            self.vars += 1

    class Double(Mutator):
        def __init__(self):
            self.seen = 0

        def visit_tir_IntImm(self, imm):
            self.seen += 1
            return tir.IntImm(imm.dtype, imm.value * 2)

    n = tir.Var("n", "int64")
    counter = Count()
    counter.visit(tir.Add(n, tir.Mul(n, i64(3))))
    assert counter.vars == 2
    three = i64(3)
    doubled = Double().visit(tir.Add(three, three))
    assert doubled.a.value == 6 and doubled.a is doubled.b


def test_with_fields_copies_as_the_constructor_builds():
    """with_fields copies plain nodes field by field (the passes rebuild thousands) and
    builds the others through their constructor, __post_init__ included."""
    import numpy as np
    import pytest

    from relax.diagnostics import Span
    from relax.ir import tir as T
    from relax.ir.expr import Constant

    i, j = T.Var("i", "int64"), T.Var("j", "int64")
    add = T.Add(i, T.IntImm("int64", 3), span=Span("k.relax", 1, 2, 1, 9))
    changed = add.with_fields(b=j)
    assert type(changed) is T.Add and changed.a is i and changed.b is j and changed.span is add.span
    assert add.b.value == 3  # the original is untouched
    assert add.with_fields(span=None).span is None
    assert T.FloatImm("float32", 1.0).with_fields(value=2).value == 2.0
    assert type(T.FloatImm("float32", 1.0).with_fields(value=2).value) is float  # its __post_init__ ran
    frozen = Constant(np.zeros(2, np.float32)).with_fields(data=np.ones(2, np.float32))
    assert not frozen.data.flags.writeable
    with pytest.raises(TypeError):
        add.with_fields(c=1)
    with pytest.raises(AttributeError):
        changed.a = j  # still frozen
