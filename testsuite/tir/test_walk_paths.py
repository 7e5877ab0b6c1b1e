"""The traversals the schedules and passes lean on (tir/rewrite.walk and collect,
tir/loop_nests.uses and has_thread_bindings) against a plain recursive reference."""

import dataclasses

from tir_builders import buffer, f32, i32, loops, matmul_func, prim_func

from relax.ir import tir
from relax.ir.node import FrozenDict, Node
from relax.tir import lower_for_codegen
from relax.tir.loop_nests import has_thread_bindings, uses
from relax.tir.rewrite import collect, walk


def reference_walk(node, seen=None) -> list:
    """Pre-order, fields in declaration order, tuples flattened, each buffer once."""
    seen = set() if seen is None else seen
    if isinstance(node, tuple):
        return [n for item in node for n in reference_walk(item, seen)]
    if not isinstance(node, Node) or isinstance(node, FrozenDict):
        return []
    if isinstance(node, tir.Buffer):
        if id(node) in seen:
            return []
        seen.add(id(node))
    found = [node]
    for field in dataclasses.fields(node):
        if field.name != "span":
            found += reference_walk(getattr(node, field.name), seen)
    return found


def test_walk_visits_what_the_reference_visits_in_its_order():
    for func in (matmul_func(7, 5, 3), lower_for_codegen(matmul_func(16, 4, 8), None)):
        visited = []
        walk(func.body, visited.append)
        assert [id(n) for n in visited] == [id(n) for n in reference_walk(func.body)]
        assert collect(func.body, tir.For) == [n for n in reference_walk(func.body) if isinstance(n, tir.For)]


def test_collect_of_statements_finds_what_the_reference_finds_in_its_order():
    """A statement-only query skips the expressions (rewrite.statements): the same nodes in
    the same order, for blocks and loops before lowering, stores after it, a tuple of
    classes, a function as the root, and an expression root (no statement in it)."""
    scheduled = lower_for_codegen(matmul_func(16, 4, 8), None)
    for root in (matmul_func(7, 5, 3).body, matmul_func(7, 5, 3), scheduled.body, scheduled):
        for query in (tir.Block, tir.BlockRealize, tir.BufferStore, tir.For, (tir.For, tir.BufferStore),
                      (tir.SeqStmt, tir.Block)):
            expected = [n for n in reference_walk(root) if isinstance(n, query)]
            assert [id(n) for n in collect(root, query)] == [id(n) for n in expected], query
    load = tir.BufferLoad(buffer("A", (4,)), (i32(1),))
    assert collect(tir.Add(load, load), tir.BufferStore) == []


def test_uses_finds_variables_in_expressions_and_buffer_shapes():
    n, i, other = tir.Var("n", "int32"), tir.Var("i", "int32"), tir.Var("other", "int32")
    a = tir.Buffer("A", (n,), "float32", data=tir.Var("A", "handle"))
    load = tir.BufferLoad(a, (i32(0),))
    assert uses(load, n) and not uses(load, i)
    assert uses(tir.Add(tir.Mul(i, i32(2)), i32(1)), i) and not uses(tir.Add(i, i32(1)), other)
    assert uses((i32(3), (other,)), other)


def test_thread_bindings_are_found_under_blocks_branches_and_sequences():
    a = buffer("A", (64,))
    store = tir.BufferStore(a, f32(1.0), (tir.Var("t", "int32"),))
    bound = tir.For(tir.Var("t", "int32"), i32(0), i32(64), "thread_binding", store, thread_tag="threadIdx.x")
    nested = tir.SeqStmt((tir.Evaluate(i32(0)), tir.IfThenElse(tir.LT(i32(1), i32(2)), bound, None)))
    assert has_thread_bindings(prim_func([a], nested))
    extent = tir.AttrStmt(tir.IterVar(tir.Range(i32(0), i32(64)), tir.Var("bx", "int32"), "ThreadIndex", "blockIdx.x"),
                          "thread_extent", i32(64), tir.Evaluate(i32(0)))
    assert has_thread_bindings(prim_func([a], tir.SeqStmt((tir.Evaluate(i32(0)), extent))))
    assert not has_thread_bindings(matmul_func(4, 4, 4))
    plain = loops([("i", 64)], lambda i: tir.BufferStore(a, f32(0.0), (i,)))
    assert not has_thread_bindings(prim_func([a], plain))


def test_rewriter_dispatch_per_subclass_and_identity_when_unchanged():
    from relax.tir.rewrite import Rewriter, substitute

    class Doubler(Rewriter):
        def visit_IntImm(self, imm):
            return tir.IntImm(imm.dtype, imm.value * 2)

    class Counter(Rewriter):
        seen = 0

        def count(self, var):
            self.seen += 1
            return var

        visit_Var = count

    i = tir.Var("i", "int32")
    expr = tir.Add(tir.Mul(i, i32(3)), i32(4))
    doubled = Doubler().visit(expr)
    assert doubled.b.value == 8 and doubled.a.b.value == 6 and doubled.a.a is i
    counter = Counter()
    assert counter.visit(expr) is expr and counter.seen == 1  # nothing changed: the same object
    assert Rewriter().visit(expr) is expr  # the base class keeps the cached dispatch of no subclass
    func = matmul_func(4, 4, 4)
    assert Rewriter().visit(func.body) is func.body
    j = tir.Var("j", "int32")
    assert substitute(expr, {i: j}).a.a is j
    load = tir.BufferLoad(buffer("A", (4, 4)), (i, i32(1)))
    moved = substitute(load, {i: j})
    assert moved.indices[0] is j and moved.indices[1] is load.indices[1] and moved.buffer is load.buffer


def test_a_statements_only_rewriter_keeps_expressions_unwalked():
    """Passes over statements (lower-attr-stmts, annotate-storage, ...) skip the expressions,
    most of a kernel's nodes; what they return is what a full walk returns."""
    from relax.ir import structural_equal
    from relax.tir.rewrite import Rewriter

    class Loops(Rewriter):
        def __init__(self):
            self.seen = []

        def visit_For(self, loop):
            return self.generic_visit(loop).with_fields(kind="serial")

        def generic_visit(self, node):
            self.seen.append(type(node).__name__)
            return super().generic_visit(node)

    class StatementLoops(Loops):
        statements_only = True

    func = lower_for_codegen(matmul_func(16, 4, 8), None)
    full, statements = Loops(), StatementLoops()
    expected, result = full.visit(func.body), statements.visit(func.body)
    assert structural_equal(result, expected)
    assert "BufferLoad" in full.seen and "Add" in full.seen
    assert not {"BufferLoad", "Add", "Mul", "Var"} & set(statements.seen)
    assert "For" in statements.seen
