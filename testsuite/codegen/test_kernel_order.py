"""kernel_order.py: kernels with the most reduction work are generated first, ties by name."""

from codegen_tir import elementwise

from relax.codegen.kernel_order import generation_order, reduction_work
from relax.ir import tir
from relax.op.te import compute, create_prim_func, placeholder, reduce_axis, reduce_sum


def _matmul(n: int, k: int, m: int) -> tir.PrimFunc:
    a = placeholder((n, k), "float32", "A")
    b = placeholder((k, m), "float32", "B")
    r = reduce_axis(k, "r")
    c = compute((n, m), lambda i, j: reduce_sum(tir.Mul(a[i, r.var], b[r.var, j]), r), "C")
    return create_prim_func([a, b, c])


def test_reduction_work_counts_reducing_blocks():
    assert reduction_work(_matmul(8, 16, 4)) == 8 * 16 * 4
    assert reduction_work(elementwise(40, ["float32", "float32"], "float32", tir.Add)) == 0


def test_heaviest_first_then_names():
    funcs = {"add": elementwise(40, ["float32", "float32"], "float32", tir.Add), "big": _matmul(32, 32, 32),
             "small": _matmul(4, 4, 4), "also_add": elementwise(8, ["float32", "float32"], "float32", tir.Add)}
    groups = [["add"], ["also_add"], ["big"], ["small"]]
    assert generation_order(groups, funcs) == [["big"], ["small"], ["add"], ["also_add"]]
