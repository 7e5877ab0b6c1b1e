"""Hand-built IR for the ir/ unit tests, and hypothesis strategies for random IR.

Builders take the names of their variables so that tests can build the same
program twice with different names (alpha-renamed copies) or different objects.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from relax import ir
from relax.diagnostics import Span
from relax.ir import tir


def i64(value: int) -> tir.IntImm:
    return tir.IntImm("int64", value)


def tensor(shape, dtype: str = "float32") -> ir.TensorStructInfo:
    values = tuple(i64(d) if isinstance(d, int) else d for d in shape)
    return ir.TensorStructInfo(ir.ShapeExpr(values), dtype)


def op(name: str) -> ir.Op:
    return ir.Op(name)


def seq(bindings, result, dataflow: bool = False) -> ir.SeqExpr:
    block = (ir.DataflowBlock if dataflow else ir.BindingBlock)(tuple(bindings))
    return ir.SeqExpr((block,), result)


def add_function(a: str = "x", b: str = "y", swap: bool = False) -> ir.Function:
    """f(a, b) = a + b (or b + a when swapped) over (4,) float32 tensors."""
    x = ir.Var(a, tensor((4,)))
    y = ir.Var(b, tensor((4,)))
    z = ir.Var("z", tensor((4,)))
    args = (y, x) if swap else (x, y)
    return ir.Function((x, y), seq([ir.VarBinding(z, ir.Call(op("relax.add"), args))], z), tensor((4,)))


def symbolic_function(n_name: str = "n", dtype: str = "float32") -> ir.Function:
    """f(x: (n, 4)) -> (n, 4): a dataflow block and a match_cast defining m."""
    n = tir.Var(n_name, "int64")
    m = tir.Var("m", "int64")
    x = ir.Var("x", tensor((n, 4), dtype))
    lv = ir.DataflowVar("lv", tensor((n, 4), dtype))
    gv = ir.Var("gv", tensor((n, 4), dtype))
    cast = ir.Var("cast", tensor((m,), dtype))
    body = ir.SeqExpr(
        (
            ir.DataflowBlock((
                ir.VarBinding(lv, ir.Call(op("relax.exp"), (x,))),
                ir.VarBinding(gv, ir.Call(op("relax.add"), (lv, x))),
            )),
            ir.BindingBlock((ir.MatchCast(cast, ir.Call(op("relax.reshape"), (gv, ir.ShapeExpr((tir.Mul(n, i64(4)),)))), tensor((m,), dtype)),)),
        ),
        gv,
    )
    return ir.Function((x,), body, tensor((n, 4), dtype), attrs=ir.FrozenDict(global_symbol="main"))


def prim_func(i_name: str = "i", buffer_name: str = "A", extent: int = 16, swap_store: bool = False) -> tir.PrimFunc:
    """B[i] = A[i] * 2 + C[i] over a symbolic-free loop, with a let and a block."""
    a, b = tir.Var("a", "handle"), tir.Var("b", "handle")
    A = tir.Buffer(buffer_name, (i64(extent),), "float32", tir.Var(buffer_name + "_data", "handle"))
    B = tir.Buffer("B", (i64(extent),), "float32", tir.Var("B_data", "handle"))
    C = tir.Buffer("C", (i64(extent),), "float32", tir.Var("C_data", "handle"))
    i = tir.Var(i_name, "int64")
    vi = tir.Var("v_" + i_name, "int64")
    t = tir.Var("t", "float32")
    load = tir.BufferLoad(A, (vi,))
    value = tir.Let(t, tir.Mul(load, tir.FloatImm("float32", 2.0)), tir.Add(t, tir.BufferLoad(C, (vi,))))
    target = A if swap_store else B
    block = tir.Block(
        "compute",
        (tir.IterVar(vi, tir.Range(i64(0), i64(extent)), "DataPar"),),
        (tir.BufferRegion(A, (tir.Range(vi, i64(1)),)),),
        (tir.BufferRegion(target, (tir.Range(vi, i64(1)),)),),
        tir.BufferStore(target, value, (vi,)),
        alloc_buffers=(C,),
    )
    loop = tir.For(i, i64(0), i64(extent), "serial", tir.BlockRealize((i,), tir.IntImm("bool", 1), block))
    return tir.PrimFunc((a, b), loop, None, ((a, A), (b, B)), ir.FrozenDict(global_symbol="add_one"))


def module(fn_names=("main",)) -> ir.IRModule:
    functions = {name: symbolic_function() for name in fn_names}
    functions["kernel"] = prim_func()
    return ir.IRModule.from_functions(functions)


def every_node_module() -> ir.IRModule:
    """A module in which every concrete node class of the IR occurs at least once."""
    span = Span("every.relax", 3, 5, 3, 9)
    n = tir.Var("n", "int64")
    s = tir.SizeVar("s", "int64")
    x = ir.Var("x", tensor((n, 4)), span=span)
    shape_var = ir.Var("shp", ir.ShapeStructInfo(ndim=2))
    flag = ir.Var("flag", ir.PrimStructInfo("bool"))
    size = ir.Var("size", ir.PrimStructInfo("int64", s))
    closure = ir.Var("fn", ir.FuncStructInfo((ir.ObjectStructInfo(),), ir.ObjectStructInfo(), purity=False))
    lv = ir.DataflowVar("lv", tensor((n, 4)))
    gv = ir.Var("gv", ir.TupleStructInfo((tensor((n, 4)), ir.PrimStructInfo("int64", s))))
    first = ir.Var("first", tensor((n, 4)))
    branch = ir.Var("branch", ir.TensorStructInfo(shape_var, "float32"))
    inner_p = ir.Var("p", ir.ObjectStructInfo())
    inner = ir.Function((inner_p,), ir.SeqExpr((), inner_p), ir.ObjectStructInfo(), is_pure=False)
    const = ir.Constant(np.arange(6, dtype="float32").reshape(2, 3))
    call_attrs = ir.FrozenDict(axis=-1, eps=1e-5, flag=True, name="x", dims=(1, 2), none=None)
    bindings = ir.DataflowBlock((
        ir.VarBinding(lv, ir.Call(op("relax.multiply"), (x, const), call_attrs, (tensor((n, 4)),))),
        ir.VarBinding(gv, ir.Tuple((lv, ir.PrimValue(s)))),
    ))
    others = ir.BindingBlock((
        ir.VarBinding(first, ir.TupleGetItem(gv, 0)),
        ir.MatchCast(branch, ir.Call(ir.ExternFunc("my.packed"), (first, ir.StringImm("s"), ir.DataTypeImm("float16"))),
                     ir.TensorStructInfo(shape_var, "float32")),
        ir.VarBinding(closure, inner),
        ir.VarBinding(ir.Var("r", ir.ObjectStructInfo()), ir.If(flag, ir.SeqExpr((), first), ir.SeqExpr((), branch))),
        ir.VarBinding(ir.Var("k"), ir.Call(ir.GlobalVar("kernel"), (ir.ShapeExpr((n, i64(4))),))),
    ))
    main = ir.Function((x, shape_var, flag, size), ir.SeqExpr((bindings, others), branch), None,
                       attrs=ir.FrozenDict(global_symbol="main", num_input=1), span=span)
    python = ir.PyFunction("helper", "@I.py_func\ndef helper(self, x):\n    return x", span=span)
    return ir.IRModule.from_functions({"main": main, "kernel": every_tir_node_func(), "simple": prim_func(),
                                       "helper": python}, attrs=ir.FrozenDict(name="every"))


def every_tir_node_func() -> tir.PrimFunc:
    """A PrimFunc using every TIR statement and expression class."""
    n = tir.Var("n", "int32")
    h = tir.Var("h", "handle")
    A = tir.Buffer("A", (n,), "float32", tir.Var("A_data", "handle"), strides=(tir.IntImm("int32", 1),),
                   elem_offset=tir.IntImm("int32", 0), axis_separators=(), offset_factor=1, align=64)
    ptr = tir.Var("ptr", "handle")
    scratch = tir.Buffer("scratch", (tir.IntImm("int32", 4),), "float32", ptr, scope="local")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    tx = tir.IterVar(tir.Var("tx", "int32"), tir.Range(tir.IntImm("int32", 0), tir.IntImm("int32", 32)), "ThreadIndex", "threadIdx.x")
    one, zero = tir.IntImm("int32", 1), tir.IntImm("int32", 0)
    f = tir.FloatImm("float32", 0.5)
    ops = [tir.Add, tir.Sub, tir.Mul, tir.Div, tir.Mod, tir.FloorDiv, tir.FloorMod, tir.Min, tir.Max]
    cmps = [tir.EQ, tir.NE, tir.LT, tir.LE, tir.GT, tir.GE]
    arith = i
    for cls in ops:
        arith = cls(arith, one)
    cond = tir.And(tir.Or(tir.Not(tir.EQ(i, zero)), tir.LT(i, n)), tir.GE(j, zero))
    for cls in cmps:
        cond = tir.And(cond, cls(arith, one))
    vector = tir.Shuffle((tir.BufferLoad(A, (tir.Ramp(zero, one, 4),)),), (tir.IntImm("int32", 3), one))
    value = tir.Select(cond, tir.Cast("float32", arith), tir.Call("float32", "tir.exp", (f,)))
    store = tir.BufferStore(A, tir.Add(value, tir.BufferLoad(A, (zero,))), (i,))
    sub = tir.Buffer("sub", (tir.IntImm("int32", 1),), "float32", tir.Var("sub_data", "handle"))
    block = tir.Block("blk", (), (), (tir.BufferRegion(A, (tir.Range(zero, one),)),), tir.Evaluate(zero),
                      init=tir.Evaluate(one), match_buffers=(tir.MatchBufferRegion(sub, tir.BufferRegion(A, (tir.Range(zero, one),))),),
                      annotations=ir.FrozenDict(note="x"))
    body = tir.SeqStmt((
        tir.For(i, zero, n, "parallel", tir.LetStmt(j, tir.Mul(i, tir.IntImm("int32", 2)), tir.IfThenElse(cond, store, tir.Evaluate(vector)))),
        tir.AttrStmt(tx, "thread_extent", tir.IntImm("int32", 32), tir.Evaluate(tir.Broadcast(f, 4))),
        tir.While(tir.LT(n, one), tir.Evaluate(tir.StringImm("loop"))),
        tir.AssertStmt(tir.GT(n, zero), tir.StringImm("n must be positive"), tir.Evaluate(zero)),
        tir.Allocate(ptr, "float32", (tir.IntImm("int32", 4),), tir.IntImm("bool", 1),
                     tir.DeclBuffer(scratch, tir.BufferStore(scratch, f, (zero,)))),
        tir.BlockRealize((), tir.IntImm("bool", 1), block),
    ))
    return tir.PrimFunc((h, n), body, "int32", ((h, A),), ir.FrozenDict(global_symbol="kernel", tir_noalias=True))


# -- random IR -----------------------------------------------------------------

_INT_OPS = [tir.Add, tir.Sub, tir.Mul, tir.FloorDiv, tir.FloorMod, tir.Min, tir.Max, tir.LT, tir.EQ]


def prim_exprs(variables: list[tir.Var]) -> st.SearchStrategy:
    """Random int64 PrimExprs over `variables`, with lets binding fresh variables."""
    leaves = st.one_of(
        st.sampled_from(variables),
        st.integers(-(2**63), 2**63 - 1).map(lambda v: tir.IntImm("int64", v)),
        st.floats(allow_nan=True, allow_infinity=True).map(lambda v: tir.Cast("int64", tir.FloatImm("float64", v))),
    )

    def extend(children):
        binary = st.tuples(st.sampled_from(_INT_OPS), children, children).map(
            lambda t: t[0](t[1], tir.Cast("int64", t[2]) if isinstance(t[2], tir.CompareOp) else t[2]))
        let = st.tuples(st.text("abcxyz", min_size=1, max_size=3), children, children).map(
            lambda t: _let(t[0], t[1], t[2]))
        return st.one_of(binary, let)

    return st.recursive(leaves, extend, max_leaves=12)


def _let(name: str, value: tir.PrimExpr, body: tir.PrimExpr) -> tir.Let:
    var = tir.Var(name, "int64")
    return tir.Let(var, value, tir.Add(body, var))


_UNARY = ["relax.exp", "relax.negative", "relax.sqrt"]
_BINARY = ["relax.add", "relax.multiply", "relax.subtract"]


@st.composite
def relax_functions(draw) -> ir.Function:
    """A random well-formed Relax function over (n, 4) tensors: a dataflow block of
    operator calls, constants and tuples, then perhaps a match_cast and an if."""
    n = tir.Var("n", "int64")
    dtype = draw(st.sampled_from(["float32", "float16", "int32"]))
    params = [ir.Var(f"p{k}", tensor((n, 4), dtype)) for k in range(draw(st.integers(1, 3)))]
    flag = ir.Var("flag", ir.PrimStructInfo("bool"))
    available: list[ir.Var] = list(params)
    bindings = []

    def bind(value, info):
        var = ir.DataflowVar(f"lv{len(bindings)}", info)
        bindings.append(ir.VarBinding(var, value))
        return var

    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["unary", "binary", "const", "tuple"]))
        if kind == "unary":
            value = ir.Call(op(draw(st.sampled_from(_UNARY))), (draw(st.sampled_from(available)),))
        elif kind == "binary":
            value = ir.Call(op(draw(st.sampled_from(_BINARY))),
                            (draw(st.sampled_from(available)), draw(st.sampled_from(available))))
        elif kind == "const":
            data = draw(st.lists(st.floats(width=16, allow_nan=True), min_size=4, max_size=4))
            const = ir.Constant(np.array(data, dtype="float16").astype(dtype) if dtype != "int32"
                                else np.arange(4, dtype="int32"))
            value = ir.Call(op("relax.add"), (draw(st.sampled_from(available)), const),
                            ir.FrozenDict(scale=draw(st.floats(allow_nan=False)), tag=draw(st.text(max_size=4))))
        else:
            fields = (draw(st.sampled_from(available)), draw(st.sampled_from(available)))
            pair = bind(ir.Tuple(fields), ir.TupleStructInfo((tensor((n, 4), dtype),) * 2))
            value = ir.TupleGetItem(pair, draw(st.integers(0, 1)))
        available.append(bind(value, tensor((n, 4), dtype)))
    out = ir.Var("gv", tensor((n, 4), dtype))
    bindings.append(ir.VarBinding(out, draw(st.sampled_from(available[len(params):]))))
    blocks = [ir.DataflowBlock(tuple(bindings))]
    result = out
    tail = []
    if draw(st.booleans()):
        m = tir.Var("m", "int64")
        result = ir.Var("cast", tensor((m, 4), dtype))
        tail.append(ir.MatchCast(result, out, tensor((m, 4), dtype)))
    if draw(st.booleans()):
        params.append(flag)
        inner = ir.Var("inner", result.struct_info)
        then = ir.SeqExpr((ir.BindingBlock((ir.VarBinding(inner, ir.Call(op("relax.exp"), (result,))),)),), inner)
        chosen = ir.Var("chosen", result.struct_info)
        tail.append(ir.VarBinding(chosen, ir.If(flag, then, ir.SeqExpr((), result))))
        result = chosen
    if tail:
        blocks.append(ir.BindingBlock(tuple(tail)))
    # A symbolic variable the body defines (m) cannot appear in the return annotation.
    ret = tensor((n, 4), dtype) if result.struct_info.shape_values[0] is n else ir.TensorStructInfo(None, dtype, 2)
    return ir.Function(tuple(params), ir.SeqExpr(tuple(blocks), result), ret)
