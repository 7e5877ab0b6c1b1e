"""The simplifier: known rewrites, and random expressions checked against the
reference interpreter on random environments inside the known bounds."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relax.ir import tir
from relax.ir.structural import structural_equal
from relax.tir import run
from relax.tir.arith import Interval, simplify_expr
from relax.tir.interpreter import Interpreter
from relax.tir.rewrite import collect
from relax.tir.simplify import Simplify

from tir_builders import buffer, f32, loops, prim_func
from tir_text import text

I, J, K, N = tir.Var("i", "int64"), tir.Var("j", "int64"), tir.Var("k", "int64"), tir.Var("n", "int64")
P = tir.Var("p", "int64")  # 0 <= p < n, as a loop variable of `for p in range(n)`
ENV = {I: Interval(0, 15), J: Interval(0, 127), K: Interval(-50, 50), N: Interval(0, None), P: Interval(0, None)}
RANGES = {P: (tir.IntImm("int64", 0), tir.Sub(N, tir.IntImm("int64", 1)))}


def c64(value):
    return tir.IntImm("int64", value)


def c32(value):
    return tir.IntImm("int32", value)


# -- known rewrites ---------------------------------------------------------------------
i, j, n = tir.Var("i"), tir.Var("j"), tir.Var("n")
ENV32 = {i: Interval(0, 15), j: Interval(0, 127), n: Interval(0, None)}
CASES = [
    (tir.Sub(tir.Add(tir.Add(tir.Mul(i, c32(128)), j), c32(0)), j), tir.Mul(i, c32(128))),
    (tir.FloorDiv(tir.Add(tir.Mul(i, c32(128)), j), c32(128)), i),
    (tir.FloorMod(tir.Add(tir.Mul(i, c32(128)), j), c32(128)), j),
    (tir.Add(tir.Mul(tir.FloorDiv(n, c32(4)), c32(4)), tir.FloorMod(n, c32(4))), n),
    (tir.Add(tir.Mul(tir.Div(n, c32(4)), c32(4)), tir.Mod(n, c32(4))), n),
    (tir.Min(i, c32(200)), i),
    (tir.Max(i, c32(200)), c32(200)),
    (tir.Mul(tir.Mul(n, c32(3)), c32(5)), tir.Mul(n, c32(15))),
    (tir.Mul(n, c32(0)), c32(0)),
    (tir.Add(tir.Mul(n, c32(1)), c32(0)), n),
    (tir.FloorDiv(tir.Mul(n, c32(4)), c32(8)), tir.FloorDiv(n, c32(2))),
    (tir.FloorDiv(tir.FloorDiv(n, c32(4)), c32(8)), tir.FloorDiv(n, c32(32))),
    (tir.FloorMod(tir.FloorMod(n, c32(8)), c32(4)), tir.FloorMod(n, c32(4))),
    (tir.FloorDiv(tir.Add(tir.Mul(n, c32(8)), c32(13)), c32(4)), tir.Add(tir.Mul(n, c32(2)), c32(3))),
    (tir.Div(tir.Add(tir.Mul(i, c32(128)), j), c32(128)), i),
    (tir.Mod(tir.Add(tir.Mul(i, c32(128)), j), c32(128)), j),
    (tir.LT(i, c32(16)), tir.IntImm("bool", 1)),
    (tir.GE(j, c32(128)), tir.IntImm("bool", 0)),
    (tir.Select(tir.LT(c32(1), c32(2)), i, j), i),
    (tir.Call("int32", "tir.if_then_else", (tir.IntImm("bool", 0), i, j)), j),
    (tir.And(tir.IntImm("bool", 1), tir.LT(i, n)), tir.LT(i, n)),
    (tir.Cast("int32", tir.IntImm("int64", 7)), c32(7)),
    (tir.Min(tir.Add(n, c32(3)), tir.Add(n, c32(5))), tir.Add(n, c32(3))),
    (tir.Mul(tir.FloatImm("float32", 2.0), tir.FloatImm("float32", 3.0)), tir.FloatImm("float32", 6.0)),
    # A packed gemv strip's index, packed[j // 256, 0, j % 256] flattened, j = i * 64 + 16: the
    # merged pair keeps x's constant (it once lost it, and every strip read columns 0-15).
    (tir.Add(tir.Mul(tir.FloorDiv(tir.Add(tir.Mul(i, c32(64)), c32(16)), c32(256)), c32(256)),
             tir.FloorMod(tir.Add(tir.Mul(i, c32(64)), c32(16)), c32(256))),
     tir.Add(tir.Mul(i, c32(64)), c32(16))),
]


@pytest.mark.parametrize("before, expected", CASES, ids=[text(case[0]) for case in CASES])
def test_known_rewrites(before, expected):
    after = simplify_expr(before, ENV32)
    assert structural_equal(after, expected), f"{text(before)} -> {text(after)}, expected {text(expected)}"


x = tir.Var("x", "float32")
FLOAT_KEPT = [
    tir.Add(x, tir.FloatImm("float32", 0.0)),   # -0.0 + 0.0 is +0.0
    tir.Mul(x, tir.FloatImm("float32", 0.0)),   # NaN * 0 is NaN
    tir.Sub(tir.Add(x, tir.FloatImm("float32", 1.0)), tir.FloatImm("float32", 1.0)),
    tir.EQ(x, x),                               # NaN != NaN
    tir.Max(x, tir.FloatImm("float32", 1.0)),  # only constants fold for floats
]


@pytest.mark.parametrize("expr", FLOAT_KEPT, ids=text)
def test_float_expressions_are_not_rewritten_unsafely(expr):
    assert structural_equal(simplify_expr(expr, {}), expr)


def test_exact_float_identities():
    assert simplify_expr(tir.Mul(x, tir.FloatImm("float32", 1.0))) is x
    assert simplify_expr(tir.Sub(x, tir.FloatImm("float32", 0.0))) is x
    assert simplify_expr(tir.Add(x, tir.FloatImm("float32", -0.0))) is x
    assert simplify_expr(tir.Div(x, tir.FloatImm("float32", 1.0))) is x


def test_division_by_zero_is_left_alone():
    expr = tir.FloorDiv(c32(4), c32(0))
    assert structural_equal(simplify_expr(expr), expr)


def test_truncating_division_of_a_possibly_negative_value_is_kept():
    k = tir.Var("k")
    expr = tir.Div(k, c32(4))
    assert structural_equal(simplify_expr(expr, {k: Interval(-5, 5)}), expr)


# -- random expressions ---------------------------------------------------------------------
_LEAVES = st.one_of(st.sampled_from([I, J, K, N, P]), st.integers(-64, 64).map(c64))
_ARITH = [tir.Add, tir.Sub, tir.Mul, tir.Min, tir.Max, tir.FloorDiv, tir.FloorMod, tir.Div, tir.Mod]
_COMPARE = [tir.LT, tir.LE, tir.GT, tir.GE, tir.EQ, tir.NE]


def _extend(children):
    binary = st.tuples(st.sampled_from(_ARITH), children, children).map(lambda t: t[0](t[1], t[2]))
    by_const = st.tuples(st.sampled_from([tir.FloorDiv, tir.FloorMod, tir.Div, tir.Mod, tir.Mul]),
                         children, st.integers(-9, 16).map(c64)).map(lambda t: t[0](t[1], t[2]))
    select = st.tuples(st.sampled_from(_COMPARE), children, children, children, children).map(
        lambda t: tir.Select(t[0](t[1], t[2]), t[3], t[4]))
    return st.one_of(binary, by_const, select)


EXPRESSIONS = st.recursive(_LEAVES, _extend, max_leaves=8)


def _evaluate(expr, values):
    machine = Interpreter()
    machine.env = dict(values)
    try:
        return machine.eval(expr)
    except ZeroDivisionError:
        return "division by zero"


@given(expr=EXPRESSIONS, data=st.data())
@settings(max_examples=400, deadline=None)
def test_random_integer_expressions_keep_their_value(expr, data):
    simplified = simplify_expr(expr, ENV, RANGES)
    for _ in range(5):
        values = {I: data.draw(st.integers(0, 15)), J: data.draw(st.integers(0, 127)),
                  K: data.draw(st.integers(-50, 50)), N: data.draw(st.integers(1, 200))}
        values[P] = data.draw(st.integers(0, values[N] - 1))
        expected = _evaluate(expr, values)
        if expected == "division by zero":
            continue
        assert _evaluate(simplified, values) == expected, f"{text(expr)} -> {text(simplified)} at {values}"


@given(expr=EXPRESSIONS)
@settings(max_examples=200, deadline=None)
def test_simplification_is_idempotent(expr):
    once = simplify_expr(expr, ENV, RANGES)
    assert structural_equal(simplify_expr(once, ENV, RANGES), once), f"{text(once)}"


@given(scale=st.integers(1, 64), offset=st.integers(-300, 300), divisor=st.integers(1, 512),
       factor=st.integers(-4, 4), row=st.integers(-3, 3), values=st.lists(st.integers(0, 15), min_size=1, max_size=4))
@settings(max_examples=300, deadline=None)
def test_division_pairs_of_indices_keep_their_value(scale, offset, divisor, factor, row, values):
    """factor * (x // d * d + x % d) + row * i == factor * x + row * i, the pattern of flattened
    packed and split indices, with constants in x that the pair's merge must carry."""
    x = tir.Add(tir.Mul(i, c32(scale)), c32(offset))
    d = c32(divisor)
    pair = tir.Add(tir.Mul(tir.FloorDiv(x, d), d), tir.FloorMod(x, d))
    expr = tir.Add(tir.Mul(pair, c32(factor)), tir.Mul(i, c32(row)))
    simplified = simplify_expr(expr, ENV32)
    for value in values:
        assert _evaluate(simplified, {i: value}) == _evaluate(expr, {i: value}), f"{text(expr)} -> {text(simplified)}"


_RING_LEAVES = st.one_of(st.sampled_from([i, j, n]), st.integers(-2**31, 2**31 - 1).map(c32))
RING = st.recursive(_RING_LEAVES, lambda ch: st.tuples(st.sampled_from([tir.Add, tir.Sub, tir.Mul]), ch, ch)
                    .map(lambda t: t[0](t[1], t[2])), max_leaves=10)


@given(expr=RING, values=st.tuples(*[st.integers(-2**31, 2**31 - 1)] * 3))
@settings(max_examples=300, deadline=None)
def test_ring_arithmetic_is_exact_under_int32_wrapping(expr, values):
    env = dict(zip((i, j, n), values))
    assert _evaluate(simplify_expr(expr), env) == _evaluate(expr, env)


# -- statements -------------------------------------------------------------------------------
def test_statement_rules():
    A = buffer("A", (16,))
    store = lambda index: tir.BufferStore(A, f32(1.0), (index,))
    unit = loops([("u", 1)], lambda u: store(tir.Add(u, c32(3))))
    empty = loops([("e", 0)], lambda e: store(e))
    guarded = loops([("g", 8)], lambda g: tir.IfThenElse(tir.LT(g, c32(4)), tir.IfThenElse(
        tir.LT(g, c32(6)), store(g), store(c32(15)))))
    func = prim_func([A], tir.SeqStmt((unit, tir.SeqStmt((empty, guarded)))))
    after = Simplify().run(func)
    assert isinstance(after.body, tir.SeqStmt) and len(after.body.seq) == 2
    first, loop = after.body.seq
    assert isinstance(first, tir.BufferStore) and first.indices[0].value == 3
    assert len(collect(loop, tir.IfThenElse)) == 1
    a1, a2 = np.zeros(16, np.float32), np.zeros(16, np.float32)
    run(func, a1)
    run(after, a2)
    np.testing.assert_array_equal(a1, a2)


def test_loops_of_extent_one_are_replaced_by_their_start_everywhere():
    """Nested loops of one iteration each: the variables in indices, conditions, inner loop
    bounds and a local buffer's shape, the same as substituting first and simplifying then."""
    from relax.tir.rewrite import substitute

    A, n = buffer("A", (64,)), tir.Var("n")
    u, v, w = tir.Var("u"), tir.Var("v"), tir.Var("w")
    local_var = tir.Var("local", "handle")
    local = tir.Buffer("local", (tir.Add(u, c32(1)),), "float32", local_var)
    inner = tir.For(w, c32(0), tir.Add(v, c32(2)), "serial", tir.SeqStmt((
        tir.BufferStore(local, f32(2.0), (tir.Sub(v, c32(3)),)),
        tir.IfThenElse(tir.LT(tir.Add(u, w), n), tir.BufferStore(
            A, tir.BufferLoad(local, (c32(0),)), (tir.Add(tir.Mul(u, c32(8)), tir.Add(w, v)),))))))
    alloc = tir.Allocate(local_var, "float32", (tir.Add(u, c32(1)),), tir.const(True, "bool"),
                         tir.DeclBuffer(local, inner))
    body = tir.For(u, c32(2), c32(1), "serial", tir.For(v, tir.Add(u, c32(1)), c32(1), "serial", alloc))
    func = prim_func([A], body, scalars=(n,))
    after = Simplify().run(func)
    assert not any(loop.loop_var in (u, v) for loop in collect(after.body, tir.For))
    by_substitution = substitute(substitute(body, {u: c32(2)}).body, {v: c32(3)})
    assert structural_equal(after.body, Simplify().run(func.with_fields(body=by_substitution)).body)
    assert text(collect(after.body, tir.Allocate)[0].extents[0]) == "3"
    a1, a2 = np.zeros(64, np.float32), np.zeros(64, np.float32)
    run(func, a1, 40)
    run(after, a2, 40)
    np.testing.assert_array_equal(a1, a2)
    assert a2[16 + 3 + 4] == 2.0


def test_loop_ranges_feed_index_simplification():
    A, B = buffer("A", (4, 32)), buffer("B", (128,))
    body = loops([("t", 128)], lambda t: tir.BufferStore(
        B, tir.BufferLoad(A, (tir.FloorDiv(t, c32(32)), tir.FloorMod(t, c32(32)))), (t,)))
    from relax.tir.flatten_buffers import FlattenBuffers
    after = Simplify().run(FlattenBuffers().run(prim_func([A, B], body)))
    load = collect(after.body, tir.BufferLoad)[0]
    assert isinstance(load.indices[0], tir.Var), text(load.indices[0])


def test_symbolic_loop_ranges_decide_comparisons():
    n = tir.Var("n")
    A = buffer("A", (n,))
    body = loops([("p", n)], lambda p: tir.IfThenElse(tir.LT(p, n), tir.BufferStore(
        A, f32(1.0), (tir.Min(p, tir.Sub(n, c32(1))),))))
    after = Simplify().run(prim_func([A], body))
    assert not collect(after.body, tir.IfThenElse)
    store = collect(after.body, tir.BufferStore)[0]
    assert store.indices[0] is after.body.loop_var
