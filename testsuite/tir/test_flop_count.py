"""tir/flop_count.py: the static floating-point operation count of a kernel."""

from relax.script import parse
from relax.tir.flop_count import flop_count

SOURCE = """
from tvm.script import ir as I
from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def matmul(A: T.Buffer((8, 16), "float32"), B: T.Buffer((16, 4), "float32"), C: T.Buffer((8, 4), "float32")):
        for i, j, k in T.grid(8, 4, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def exp_add(A: T.Buffer((3, 5), "float32"), B: T.Buffer((3, 5), "float32")):
        for i, j in T.grid(3, 5):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.exp(A[vi, vj]) + T.float32(1)

    @T.prim_func
    def int_copy(A: T.Buffer((6,), "int32"), B: T.Buffer((6,), "int32")):
        for i in range(6):
            with T.block("B"):
                vi = T.axis.spatial(6, i)
                B[vi] = A[vi] * 2 + 1

    @T.prim_func
    def padded(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            if i < 2:
                B[i] = A[i] * A[i] + A[i]
            else:
                B[i] = A[i] * T.float32(2)

    @T.prim_func
    def symbolic(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            with T.block("B"):
                vi = T.axis.spatial(n, i)
                B[vi] = A[vi] + T.float32(1)
"""

MODULE = parse(SOURCE)


def test_matmul_counts_a_multiply_and_an_add_per_reduction_step_and_not_its_init():
    assert flop_count(MODULE["matmul"]) == 2 * 8 * 4 * 16


def test_a_math_call_counts_one():
    assert flop_count(MODULE["exp_add"]) == 2 * 3 * 5


def test_integer_arithmetic_is_not_counted():
    assert flop_count(MODULE["int_copy"]) == 0


def test_the_dearer_branch_of_an_if_counts():
    assert flop_count(MODULE["padded"]) == 4 * 2


def test_a_symbolic_loop_makes_the_count_unknown():
    assert flop_count(MODULE["symbolic"]) is None
