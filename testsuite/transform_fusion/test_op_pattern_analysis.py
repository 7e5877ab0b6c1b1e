"""AnnotateTIROpPattern on hand-written kernels: the cases legalization rarely makes."""

import pytest

from relax.script import parse
from relax.transform.annotate_tir_op_pattern import analyze_op_pattern
from relax.ir.pass_infra import get_pass

HEADER = """
# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
"""

BROADCAST = """
    @T.prim_func(private=True)
    def kernel(A: T.Buffer((T.int64(4),), "float32"), B: T.Buffer((T.int64(4), T.int64(3)), "float32")):
        for i, j in T.grid(T.int64(4), T.int64(3)):
            with T.sblock("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi]
"""

POOL = """
    @T.prim_func(private=True)
    def kernel(A: T.Buffer((T.int64(8),), "float32"), B: T.Buffer((T.int64(4),), "float32")):
        for i, k in T.grid(T.int64(4), T.int64(2)):
            with T.sblock("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0.0)
                B[vi] = B[vi] + A[vi * T.int64(2) + vk]
"""

GATHER = """
    @T.prim_func(private=True)
    def kernel(A: T.Buffer((T.int64(8),), "float32"), I: T.Buffer((T.int64(4),), "int64"), B: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            with T.sblock("B"):
                vi = T.axis.spatial(T.int64(4), i)
                B[vi] = A[I[vi]]
"""

NO_BLOCKS = """
    @T.prim_func(private=True)
    def kernel(A: T.Buffer((T.int64(4),), "float32"), B: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            B[i] = A[i]
"""


@pytest.mark.parametrize("body, expected", [
    (BROADCAST, 1),   # loads use a subset of the store's indices, in order
    (POOL, 4),        # a reduction reading through a window (pooling)
    (GATHER, 8),      # a load indexed by loaded data
    (NO_BLOCKS, 8),   # plain loops: nothing to analyze, never fused
])
def test_pattern_of_kernel(body, expected):
    mod = parse(HEADER + body)
    assert analyze_op_pattern(mod["kernel"]) == expected


def test_a_given_pattern_is_kept():
    mod = parse(HEADER + BROADCAST)
    once = get_pass("annotate-tir-op-pattern").run(mod)
    assert once["kernel"].attrs["op_pattern"] == 1
    marked = once.with_function("kernel", once["kernel"].with_fields(attrs=once["kernel"].attrs.updated(op_pattern=8)))
    assert get_pass("annotate-tir-op-pattern").run(marked)["kernel"].attrs["op_pattern"] == 8
    assert "op_pattern" not in mod["kernel"].attrs  # the input module is left as it was


def test_analysis_leaves_no_visitor_classes_behind():
    # A visitor class made per call stayed in the visitors' handler cache for good.
    from relax.ir import visitor

    kernel = parse(HEADER + GATHER, "gather.relax")["kernel"]
    analyze_op_pattern(kernel)
    cached = len(visitor._HANDLER_NAMES)
    for _ in range(3):
        analyze_op_pattern(kernel)
    assert len(visitor._HANDLER_NAMES) == cached
