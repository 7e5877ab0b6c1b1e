"""Struct-info inference and legalization of the elementwise binary operators."""

import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import bind_call, struct_info_of
from relax.op.legalize_context import LegalizeContext
from relax.op.registry import get


def i64(value):
    return tir.IntImm("int64", value)


def tensor(name, dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else i64(d) for d in dims)
    return ir.Var(name, ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def call(op, *args):
    return ir.Call(ir.Op(f"relax.{op}"), args)


def dims_of(info):
    return [d.value if isinstance(d, tir.IntImm) else d for d in info.shape_values]


@pytest.mark.parametrize(
    "lhs, rhs, expected",
    [((3, 4), (3, 4), [3, 4]), ((3, 4), (4,), [3, 4]), ((3, 1), (1, 5), [3, 5]), ((), (2, 2), [2, 2]),
     ((2, 1, 4), (3, 1), [2, 3, 4])],
)
def test_static_broadcast(lhs, rhs, expected):
    info = struct_info_of(call("add", tensor("a", lhs), tensor("b", rhs)))
    assert dims_of(info) == expected and info.dtype == "float32"


def test_symbolic_broadcast_keeps_the_variable():
    n = tir.Var("n", "int64")
    info = struct_info_of(call("multiply", tensor("x", (n, 4)), tensor("b", (1, 4))))
    assert dims_of(info) == [n, 4]


def test_undecidable_symbolic_sizes_keep_ndim():
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    info = struct_info_of(call("add", tensor("x", (n, 4)), tensor("y", (m, 4))))
    assert info.shape is None and info.ndim == 2


def test_comparison_gives_bool():
    assert struct_info_of(call("less", tensor("a", (2,)), tensor("b", (2,)))).dtype == "bool"


def test_broadcast_error_message():
    with pytest.raises(DiagnosticError, match=r"cannot broadcast \(3, 4\) with \(5, 4\) in R.add"):
        struct_info_of(call("add", tensor("a", (3, 4)), tensor("b", (5, 4))))


def test_dtype_mismatch():
    with pytest.raises(DiagnosticError, match="float32 and int32 must be equal"):
        struct_info_of(call("add", tensor("a", (2,)), tensor("b", (2,), "int32")))


def test_bitwise_needs_integers():
    with pytest.raises(DiagnosticError, match="must be integers"):
        struct_info_of(call("bitwise_and", tensor("a", (2,)), tensor("b", (2,))))


def test_unknown_operator_suggests():
    with pytest.raises(DiagnosticError, match=r"unknown operator 'R.ad'; did you mean 'R.add'\?"):
        struct_info_of(call("ad", tensor("a", (2,)), tensor("b", (2,))))


def test_wrong_argument_count():
    with pytest.raises(DiagnosticError, match="takes 2 arguments but 3 were given"):
        struct_info_of(call("add", tensor("a", (2,)), tensor("b", (2,)), tensor("c", (2,))))


def test_legalize_builds_a_broadcasting_prim_func():
    n = tir.Var("n", "int64")
    x, b = tensor("x", (n, 4)), tensor("b", (4,))
    bound = bind_call(call("add", x, b))
    context = LegalizeContext({"add"})
    result = get("relax.add").legalize(bound, context)
    assert result.op.name == "relax.call_tir"
    assert result.args[0].name_hint == "add1"  # "add" is taken in the module
    func = context.new_functions["add1"]
    assert len(func.params) == 3
    block = func.body.block.body
    while isinstance(block, tir.For):
        block = block.body
    store = block.block.body
    # b is indexed by the last output axis only.
    assert len(store.value.b.indices) == 1 and store.value.b.indices[0] is block.block.iter_vars[1].var
    # The PrimFunc has its own symbolic variable; the output struct info uses the caller's.
    assert func.buffer_map[0][1].shape[0] is not n
    assert result.sinfo_args[0].shape_values[0] is n
