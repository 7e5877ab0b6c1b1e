"""parse_prim_func: signatures, attributes, symbolic sizes, the root block."""

import textwrap

from relax.ir import GlobalVar, tir

from tir_helpers import dump, only_ok, prim_func

I32 = lambda v: ("IntImm", "int32", v)  # noqa: E731
I64 = lambda v: ("IntImm", "int64", v)  # noqa: E731


def src(text):
    return textwrap.dedent(text).strip() + "\n"


def test_buffer_parameters_are_handles_with_buffers():
    func = only_ok(src('''
        @T.prim_func
        def add(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "int64", strides=(2,), offset_factor=1)):
            A[0, 0] = T.float32(1.0)
    '''))
    a, b = func.params
    assert (a.name, a.dtype, b.name, b.dtype) == ("A", "handle", "B", "handle")
    buffer_a, buffer_b = func.buffer_of(a), func.buffer_of(b)
    assert (buffer_a.name, dump(buffer_a.shape), buffer_a.dtype) == ("A", (I32(8), I32(16)), "float32")
    assert (dump(buffer_b.strides), buffer_b.offset_factor, buffer_b.dtype) == ((I32(2),), 1, "int64")
    assert func.body.buffer is buffer_a
    assert dict(func.attrs) == {"global_symbol": "add"}


def test_decorator_options_and_function_attributes():
    func = only_ok(src('''
        @T.prim_func(private=True, s_tir=True)
        def f(A: T.Buffer((4,), "float32")):
            T.func_attr({"tirx.noalias": True, "op_pattern": 8, "names": ["a", "b"]})
            A[0] = T.float32(0.0)
    '''))
    assert dict(func.attrs) == {"tirx.noalias": True, "op_pattern": 8, "names": ("a", "b"), "s_tir": True}


def test_explicit_global_symbol_is_kept():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.func_attr({"global_symbol": "other"})
            A[0] = T.float32(0.0)
    '''))
    assert func.attrs["global_symbol"] == "other"


def test_scalar_parameters_and_return():
    func = only_ok(src('''
        @T.prim_func
        def f(a: T.int32, b: T.float32, c: T.int64, d: T.bool) -> T.float32:
            if d:
                return b
            return T.float32(0.0)
    '''))
    assert [(p.name, p.dtype) for p in func.params] == [("a", "int32"), ("b", "float32"), ("c", "int64"), ("d", "bool")]
    assert func.ret_type == "float32" and func.buffer_map == ()
    first = func.body.seq[0]
    assert dump(first.then_case) == ("Evaluate", ("Call", "float32", "tir.ret", ("b:float32",)))


def test_signature_names_become_int64_size_variables():
    func = only_ok(src('''
        @T.prim_func(s_tir=True)
        def f(x: T.Buffer((n, T.int64(8)), "float32"), y: T.Buffer(("n * T.int64(8)",), "float32")):
            for i in range(n * T.int64(8)):
                y[i] = x[i // T.int64(8), i % T.int64(8)]
    '''))
    x, y = (func.buffer_of(p) for p in func.params)
    n = x.shape[0]
    assert (n.name, n.dtype) == ("n", "int64")
    assert isinstance(y.shape[0], tir.Mul) and y.shape[0].a is n
    assert func.body.extent.a is n


def test_handle_parameters_with_match_buffer_and_declared_sizes():
    func = only_ok(src('''
        @T.prim_func
        def f(a: T.handle, m: T.int64):
            n = T.int64()
            A = T.match_buffer(a, (n, 4), "float32")
            for i in range(n):
                A[i, 0] = T.Cast("float32", m)
    '''))
    a, m = func.params
    buffer = func.buffer_of(a)
    assert (a.dtype, buffer.name, buffer.shape[0].name, buffer.shape[0].dtype) == ("handle", "A", "n", "int64")
    assert func.body.extent is buffer.shape[0]


def test_blocks_get_the_implicit_root_block():
    func = only_ok(src('''
        @T.prim_func(s_tir=True)
        def matmul(A: T.Buffer((8, 16), "float32"), B: T.Buffer((16, 4), "float32"), C: T.Buffer((8, 4), "float32")):
            for i, j, k in T.grid(8, 4, 16):
                with T.sblock("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    T.reads(A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    with T.init():
                        C[vi, vj] = T.float32(0.0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    '''))
    root = func.body
    assert isinstance(root, tir.BlockRealize) and root.block.name_hint == "root"
    assert root.block.iter_vars == () and root.block.reads == () and dump(root.predicate) == ("IntImm", "bool", 1)
    loop_i = root.block.body
    loop_k = loop_i.body.body
    assert [loop_i.loop_var.name, loop_k.loop_var.name, loop_k.kind] == ["i", "k", "serial"]
    realize = loop_k.body
    block = realize.block
    assert realize.iter_values == (loop_i.loop_var, loop_i.body.loop_var, loop_k.loop_var)
    assert [(v.var.name, v.iter_type, dump(v.dom)) for v in block.iter_vars] == [
        ("vi", "DataPar", ("Range", I32(0), I32(8))),
        ("vj", "DataPar", ("Range", I32(0), I32(4))),
        ("vk", "CommReduce", ("Range", I32(0), I32(16))),
    ]
    assert dump(block.reads) == (
        ("BufferRegion", "buffer A", (("Range", "vi:int32", I32(1)), ("Range", "vk:int32", I32(1)))),
        ("BufferRegion", "buffer B", (("Range", "vk:int32", I32(1)), ("Range", "vj:int32", I32(1)))),
    )
    assert dump(block.init) == ("BufferStore", "buffer C", ("FloatImm", "float32", 0.0), ("vi:int32", "vj:int32"))
    assert isinstance(block.body, tir.BufferStore)


def test_explicit_root_block_is_not_wrapped_again():
    func = only_ok(src('''
        @T.prim_func(s_tir=True)
        def f(A: T.Buffer((4,), "float32")):
            with T.sblock("root"):
                T.reads()
                T.writes()
                A[0] = T.float32(0.0)
    '''))
    assert func.body.block.name_hint == "root" and isinstance(func.body.block.body, tir.BufferStore)


def test_block_header_statements():
    func = only_ok(src('''
        @T.prim_func(s_tir=True)
        def f(A: T.Buffer((10,), "float32"), B: T.Buffer((10, 16), "float32")):
            S = T.sblock_alloc_buffer((8, 8), "float16", scope="shared")
            for io, ii in T.grid(3, 4):
                with T.sblock("B"):
                    vi = T.axis.spatial(10, io * 4 + ii)
                    vs = T.axis.scan((2, 6), ii)
                    T.where(io * 4 + ii < 10)
                    T.reads(A[vi])
                    T.writes(B[vi, 0:16], B[vi:vi + 2, 3])
                    T.sblock_attr({"meta_schedule.auto_tensorize": "x"})
                    L = T.sblock_alloc_buffer((4,), "int32", scope="local")
                    B[vi, 0] = A[vi]
    '''))
    root = func.body.block
    assert [(b.name, b.dtype, b.scope) for b in root.alloc_buffers] == [("S", "float16", "shared")]
    realize = root.body.body.body
    block = realize.block
    assert dump(realize.predicate)[0] == "LT"
    assert [(v.iter_type, dump(v.dom)) for v in block.iter_vars] == [
        ("DataPar", ("Range", I32(0), I32(10))),
        ("Ordered", ("Range", I32(2), I32(4))),
    ]
    assert dump(block.writes[0].region) == (("Range", "vi:int32", I32(1)), ("Range", I32(0), I32(16)))
    assert dump(block.writes[1].region) == (("Range", "vi:int32", I32(2)), ("Range", I32(3), I32(1)))
    assert dict(block.annotations) == {"meta_schedule.auto_tensorize": "x"}
    assert [(b.name, b.scope) for b in block.alloc_buffers] == [("L", "local")]


def test_loop_kinds():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((64,), "float32")):
            for i in T.parallel(4):
                for j in range(2, 10):
                    for k in T.serial(3, annotations={"pragma_auto_unroll_max_step": 16}):
                        for u in T.unroll(2):
                            for v in T.vectorized(T.int64(4)):
                                A[0] = T.float32(0.0)
            for bx in T.thread_binding(8, thread="blockIdx.x"):
                A[bx] = T.float32(1.0)
    '''))
    i = func.body.seq[0]
    j = i.body
    k = j.body
    u = k.body
    v = u.body
    assert [x.kind for x in (i, j, k, u, v)] == ["parallel", "serial", "serial", "unrolled", "vectorized"]
    assert dump((j.min, j.extent)) == (I32(2), I32(8))
    assert dict(k.annotations) == {"pragma_auto_unroll_max_step": 16}
    assert (v.loop_var.dtype, dump(v.min)) == ("int64", I64(0))
    bx = func.body.seq[1]
    assert (bx.kind, bx.thread_tag, dump(bx.extent)) == ("thread_binding", "blockIdx.x", I32(8))


def test_quoted_dimensions_point_into_the_string():
    func, errors = prim_func(src('''
        @T.prim_func
        def f(A: T.Buffer(("n * 2",), "float32"), B: T.Buffer(("m +",), "float32")):
            T.evaluate(0)
    '''))
    n = func.buffer_of(func.params[0]).shape[0].a
    assert (n.name, n.span.line, n.span.column) == ("n", 2, 21)
    assert errors == [("2:56", "'m +' is not an expression")]


def test_vectors_need_lanes():
    _, errors = prim_func(src('''
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.evaluate(T.Broadcast(T.float32(0), 0))
    '''))
    assert errors == [("3:42", "a vector has at least one lane")]


def test_module_level_declarations_give_the_type_but_not_the_variable():
    from relax.script.context import Scope

    module = Scope()
    shared = tir.Var("m", "int32")
    module.define("m", shared)
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((m,), "float32")):
            T.evaluate(0)
    '''), module)
    m = func.buffer_of(func.params[0]).shape[0]
    assert m is not shared and (m.name, m.dtype) == ("m", "int32")


def test_old_subscript_buffer_annotations():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer[(8, 4), "float16"], B: T.Buffer[8, "float32"]):
            B[0] = T.Cast("float32", A[0, 0])
    '''))
    a, b = (func.buffer_of(p) for p in func.params)
    assert (dump(a.shape), a.dtype, dump(b.shape)) == ((I32(8), I32(4)), "float16", (I32(8),))


def test_old_var_declarations():
    func = only_ok(src('''
        @T.prim_func
        def f(a: T.handle):
            n = T.var("int64")
            A = T.match_buffer(a, (n,))
            A[0] = T.float32(0)
    '''))
    n = func.buffer_of(func.params[0]).shape[0]
    assert (n.name, n.dtype) == ("n", "int64")


def test_declarations_are_read_before_the_signature():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((n, m), "float32")):
            n = T.var("int32")
            m = T.int64(is_size_var=True)
            A[0, 0] = T.float32(0)
    '''))
    n, m = func.buffer_of(func.params[0]).shape
    assert (n.dtype, type(m).__name__, m.dtype) == ("int32", "SizeVar", "int64")
