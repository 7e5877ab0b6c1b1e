"""kernel_order.py: kernels with the most reduction work are generated first, ties by name."""

from codegen_tir import elementwise

from relax.codegen import kernel_dedup
from relax.codegen.build_kernels import kernel_groups
from relax.codegen.kernel_order import generation_groups, reduction_work
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
    assert list(generation_groups(funcs)) == [["big"], ["small"], ["add"], ["also_add"]]


def test_a_group_holds_the_kernels_of_its_body():
    funcs = {"b_add": elementwise(40, ["float32", "float32"], "float32", tir.Add), "mm": _matmul(8, 8, 8),
             "a_add": elementwise(40, ["float32", "float32"], "float32", tir.Add), "mm2": _matmul(8, 8, 8),
             "c_add": elementwise(40, ["float32", "float32"], "float32", tir.Add), "sub": elementwise(
                 40, ["float32", "float32"], "float32", tir.Sub)}
    groups = list(generation_groups(funcs))
    assert groups == [["mm", "mm2"], ["a_add", "b_add", "c_add"], ["sub"]]
    assert sorted(groups) == sorted(kernel_groups(funcs))


def test_the_first_group_comes_before_other_kernels_are_compared(monkeypatch):
    compared = []
    body_key = kernel_dedup.body_key
    monkeypatch.setattr(kernel_dedup, "body_key", lambda func: compared.append(func) or body_key(func))
    funcs = {"big": _matmul(32, 32, 32), "add": elementwise(40, ["float32", "float32"], "float32", tir.Add),
             "add2": elementwise(40, ["float32", "float32"], "float32", tir.Add)}
    groups = generation_groups(funcs)
    assert next(groups) == ["big"] and compared == []
    assert next(groups) == ["add", "add2"] and len(compared) == 2
