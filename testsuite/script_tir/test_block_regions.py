"""Blocks written without T.reads/T.writes get the regions TVM would infer."""

import textwrap

from relax.script import script

from tir_helpers import dump, only_ok

I32 = lambda v: ("IntImm", "int32", v)  # noqa: E731


def blocks(func):
    root = func.body.block
    return [stmt.body.body.block if hasattr(stmt.body, "body") and hasattr(stmt.body.body, "block") else stmt.body.block
            for stmt in (root.body.seq if hasattr(root.body, "seq") else (root.body,))]


FUNC = textwrap.dedent('''
    @T.prim_func(s_tir=True)
    def f(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8, 4), "float32")):
        for i, k in T.grid(8, 4):
            with T.sblock("red"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk] + A[vi, 0]
        for i in range(8):
            with T.sblock("row"):
                vi = T.axis.spatial(8, i)
                S = T.sblock_alloc_buffer((4,))
                for j in range(4):
                    S[j] = A[vi, j] * B[vi]
                for j in range(2):
                    C[vi, j * 2 + 1] = S[j]
''')


def test_reduction_regions_skip_the_written_buffer_and_join_accesses():
    func = only_ok(FUNC)
    reduction = func.body.block.body.seq[0].body.body.block
    assert dump(reduction.writes) == (("BufferRegion", "buffer B", (("Range", "vi:int32", I32(1)),)),)
    (read,) = reduction.reads
    low = ("Min", "vk:int32", I32(0))
    assert dump(read.region) == (
        ("Range", "vi:int32", I32(1)),
        ("Range", low, ("Sub", ("Add", ("Max", "vk:int32", I32(0)), I32(1)), low)),
    )


def test_inner_loops_are_swept_and_allocated_buffers_left_out():
    func = only_ok(FUNC)
    row = func.body.block.body.seq[1].body.block
    assert dump(row.reads) == (
        ("BufferRegion", "buffer A", (("Range", "vi:int32", I32(1)), ("Range", I32(0), I32(4)))),
        ("BufferRegion", "buffer B", (("Range", "vi:int32", I32(1)),)),
    )
    assert dump(row.writes) == (("BufferRegion", "buffer C", (("Range", "vi:int32", I32(1)), ("Range", I32(1), I32(3)))),)


def test_inferred_regions_print_as_tvm_does():
    text = script(only_ok(FUNC))
    assert "T.reads(A[vi, 0:4], B[vi])" in text
    assert "T.writes(C[vi, 1:4])" in text
