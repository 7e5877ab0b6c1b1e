"""Hypothesis strategies that build random, well-formed Relax modules as IR.

The programs use dataflow blocks, elementwise operator calls with attributes,
constants, tuples and tuple indexing, shapes and prim values, symbolic sizes, and
if/else. Variable names are drawn from a small pool on purpose: distinct variables
that share a name must survive printing and parsing.
"""

from __future__ import annotations

from hypothesis import strategies as st

from relax import ir
from relax.ir import tir

NAMES = ["x", "y", "lv", "gv", "a"]
UNARY_OPS = ["relax.exp", "relax.nn.relu", "relax.negative", "relax.sqrt"]
BINARY_OPS = ["relax.add", "relax.multiply", "relax.subtract", "relax.maximum"]


def _int64(value: int) -> tir.IntImm:
    return tir.IntImm("int64", value)


def tensor_info(dims, dtype="float32") -> ir.TensorStructInfo:
    return ir.TensorStructInfo(ir.ShapeExpr(tuple(dims)), dtype)


@st.composite
def shapes(draw, symbolic):
    rank = draw(st.integers(0, 3))
    dims = []
    for _ in range(rank):
        if symbolic is not None and draw(st.booleans()):
            dims.append(symbolic)
        else:
            dims.append(_int64(draw(st.integers(1, 8))))
    return tuple(dims)


@st.composite
def functions(draw, name: str):
    symbolic = tir.Var("n", "int64") if draw(st.booleans()) else None
    dims = draw(shapes(symbolic))
    info = tensor_info(dims)
    params = tuple(ir.Var(draw(st.sampled_from(NAMES)), info) for _ in range(draw(st.integers(1, 3))))
    available: list[ir.Var] = list(params)
    bindings: list[ir.Binding] = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["unary", "binary", "const", "tuple"]))
        var_name = draw(st.sampled_from(NAMES))
        if kind == "unary":
            value = ir.Call(ir.Op(draw(st.sampled_from(UNARY_OPS))), (draw(st.sampled_from(available)),))
            sinfo = info
        elif kind == "binary":
            lhs, rhs = draw(st.sampled_from(available)), draw(st.sampled_from(available))
            value = ir.Call(ir.Op(draw(st.sampled_from(BINARY_OPS))), (lhs, rhs))
            sinfo = info
        elif kind == "const":
            scalar = draw(st.floats(-4, 4, allow_nan=False, width=32))
            value = ir.Call(ir.Op("relax.add"), (draw(st.sampled_from(available)), ir.const(scalar, "float32")))
            sinfo = info
        else:
            pair = ir.Tuple((draw(st.sampled_from(available)), draw(st.sampled_from(available))))
            tuple_var = ir.DataflowVar(var_name, ir.TupleStructInfo((info, info)))
            bindings.append(ir.VarBinding(tuple_var, pair))
            value = ir.TupleGetItem(tuple_var, draw(st.integers(0, 1)))
            sinfo = info
        var = ir.DataflowVar(var_name, sinfo)
        bindings.append(ir.VarBinding(var, value))
        available.append(var)
    result = ir.Var("gv", info)
    bindings.append(ir.VarBinding(result, ir.Call(ir.Op("relax.nn.relu"), (available[-1],))))
    body = ir.SeqExpr((ir.DataflowBlock(tuple(bindings)),), result)
    return ir.Function(params, body, info, True, ir.FrozenDict(global_symbol=name))


@st.composite
def branch_functions(draw, name: str):
    """A function with if/else whose condition is a boolean scalar parameter."""
    info = tensor_info((_int64(draw(st.integers(1, 4))),))
    cond = ir.Var("cond", tensor_info((), "bool"))
    x = ir.Var("x", info)

    def branch(op: str) -> ir.SeqExpr:
        inner = ir.Var(draw(st.sampled_from(NAMES)), info)
        return ir.SeqExpr((ir.BindingBlock((ir.VarBinding(inner, ir.Call(ir.Op(op), (x,))),)),), inner)

    result = ir.Var("r", info)
    if_expr = ir.If(cond, branch(draw(st.sampled_from(UNARY_OPS))), branch(draw(st.sampled_from(UNARY_OPS))))
    body = ir.SeqExpr((ir.BindingBlock((ir.VarBinding(result, if_expr),)),), result)
    return ir.Function((cond, x), body, info, True, ir.FrozenDict(global_symbol=name))


@st.composite
def modules(draw):
    count = draw(st.integers(1, 3))
    funcs = {}
    for index in range(count):
        name = f"main{index}" if index else "main"
        strategy = branch_functions(name) if draw(st.integers(0, 3)) == 0 else functions(name)
        funcs[name] = draw(strategy)
    return ir.IRModule.from_functions(funcs)
