"""Older and rarer block spellings: T.block, T.alloc_buffer in blocks, T.match_buffer
of a region, T.block_attr, axis domains as (min, max)."""

import textwrap

from relax.ir import tir

from tir_helpers import dump, only_ok

I32 = lambda v: ("IntImm", "int32", v)  # noqa: E731


def test_legacy_blocks_allocate_with_alloc_buffer():
    func = only_ok(textwrap.dedent('''
        @T.prim_func
        def f(a: T.handle):
            A = T.match_buffer(a, (4, 8), "float32")
            row = T.alloc_buffer((4,), "float32")
            for i, j in T.grid(4, 8):
                with T.block("max"):
                    vi, vj = T.axis.remap("SR", [i, j])
                    tmp = T.alloc_buffer((2,))
                    T.block_attr({"k": 1})
                    with T.init():
                        row[vi] = T.float32(0)
                    row[vi] = T.max(row[vi], A[vi, vj])
    '''))
    root = func.body.block
    assert [b.name for b in root.alloc_buffers] == ["row"]
    block = root.body.body.body.block
    assert [b.name for b in block.alloc_buffers] == ["tmp"] and dict(block.annotations) == {"k": 1}
    assert dump(block.writes) == (("BufferRegion", "buffer row", (("Range", "vi:int32", I32(1)),)),)
    assert dump(block.reads) == (("BufferRegion", "buffer A", (("Range", "vi:int32", I32(1)), ("Range", "vj:int32", I32(1)))),)


def test_match_buffer_of_a_region_inside_a_block():
    func = only_ok(textwrap.dedent('''
        @T.prim_func(s_tir=True)
        def f(A: T.Buffer((16, 16), "float32")):
            for io in range(4):
                with T.sblock("tile"):
                    vo = T.axis.spatial((0, 4), io)
                    T.reads()
                    T.writes(A[vo * 4:vo * 4 + 4, 0:16])
                    sub = T.match_buffer(A[vo * 4:vo * 4 + 4, 0:16], (4, 16))
                    sub[0, 0] = T.float32(1)
    '''))
    block = func.body.block.body.body.block
    (matched,) = block.match_buffers
    assert matched.buffer.name == "sub" and matched.source.buffer is func.buffer_of(func.params[0])
    assert dump(matched.source.region[0]) == ("Range", ("Mul", "vo:int32", I32(4)), I32(4))
    assert block.body.buffer is matched.buffer
    assert dump(block.iter_vars[0].dom) == ("Range", I32(0), I32(4))


def test_launch_thread_as_a_with_frame_and_classic_attr():
    func = only_ok(textwrap.dedent('''
        @T.prim_func
        def f(A: T.Buffer((128,), "float32")):
            with T.launch_thread("threadIdx.x", 128) as tx:
                T.attr(A.data, "storage_alignment", 64)
                A[tx] += T.float32(1)
    '''))
    launch = func.body
    assert launch.node.thread_tag == "threadIdx.x"
    attr = launch.body
    assert (attr.attr_key, attr.node is func.buffer_of(func.params[0]).data, dump(attr.value)) == (
        "storage_alignment", True, I32(64))
    store = attr.body
    assert dump(store.value) == ("Add", ("BufferLoad", "buffer A", ("tx:int32",)), ("FloatImm", "float32", 1.0))


def test_decl_buffer_without_data_allocates():
    func = only_ok(textwrap.dedent('''
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            B = T.decl_buffer((4,), "float32")
            B[0] = A[0]
    '''))
    assert isinstance(func.body, tir.Allocate) and func.body.body.buffer.name == "B"
