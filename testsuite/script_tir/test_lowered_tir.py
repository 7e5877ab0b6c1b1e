"""Lowered (flattened) TIR statements: allocations, buffer views, lets, scalars,
while, assert, threads, attributes, calls."""

import textwrap

from relax.ir import GlobalVar, tir
from relax.script.context import ModuleRef, Scope
from relax.script.tir_stmt_parser import LOCAL_SCALAR_ANNOTATION

from tir_helpers import dump, only_ok

I32 = lambda v: ("IntImm", "int32", v)  # noqa: E731


def src(text):
    return textwrap.dedent(text).strip() + "\n"


def test_alloc_buffer_is_an_allocate_with_a_declared_buffer():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((64,), "float32")):
            tmp = T.alloc_buffer((64,), annotations={"buffer_data_alignment": 64})
            sh = T.alloc_shared((8,), "float16")
            tmp[0] = A[0]
    '''))
    allocate = func.body
    assert isinstance(allocate, tir.Allocate)
    declared = allocate.body
    buffer = declared.buffer
    assert (buffer.name, buffer.data is allocate.buffer_var, allocate.dtype, dump(allocate.extents)) == (
        "tmp", True, "float32", (I32(64),))
    assert dict(allocate.annotations) == {"buffer_data_alignment": 64}
    shared = declared.body
    assert (shared.scope, shared.body.buffer.scope, shared.dtype) == ("shared", "shared", "float16")
    assert shared.body.body.buffer is buffer


def test_views_and_declared_buffers_share_data():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((4, 4), "float32"), B: T.Buffer((16,), "float32")):
            A_1 = A.view(16)
            B_1 = T.decl_buffer((16,), data=B.data)
            B_1[0] = A_1[3]
    '''))
    a = func.buffer_of(func.params[0])
    view = func.body
    assert isinstance(view, tir.DeclBuffer) and view.buffer.data is a.data
    assert dump(view.buffer.shape) == (I32(16),)
    assert view.body.buffer.data is func.buffer_of(func.params[1]).data


def test_lets_and_mutable_scalars():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((16,), "int32"), n: T.int32):
            x: T.let[T.int32] = n * 2
            y = x + 1
            i: T.int32 = 0
            while i < y:
                A[i] = i
                i = i + 1
    '''))
    let_x = func.body
    assert isinstance(let_x, tir.LetStmt) and (let_x.var.name, let_x.var.dtype) == ("x", "int32")
    let_y = let_x.body
    assert let_y.value.a is let_x.var
    allocate = let_y.body
    assert dict(allocate.annotations) == {LOCAL_SCALAR_ANNOTATION: True}
    scalar = allocate.body.buffer
    assert (scalar.name, scalar.scope, dump(scalar.shape)) == ("i", "local", (I32(1),))
    init, loop = allocate.body.body.seq
    assert dump(init) == ("BufferStore", "buffer i", I32(0), (I32(0),))
    assert isinstance(loop, tir.While)
    assert dump(loop.condition) == ("LT", ("BufferLoad", "buffer i", (I32(0),)), "y:int32")
    assert dump(loop.body.seq[1]) == (
        "BufferStore", "buffer i", ("Add", ("BufferLoad", "buffer i", (I32(0),)), I32(1)), (I32(0),))


def test_assert_if_else_and_extern_calls():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((16,), "int32"), n: T.int32):
            assert n <= 16, ("RuntimeError", ["n too ", "large"])
            if A[0] < 0:
                T.call_extern("int32", "abort")
            else:
                T.evaluate(0)
            T.call_packed("my.notify", n)
    '''))
    check = func.body
    assert isinstance(check, tir.AssertStmt) and dump(check.message) == ("StringImm", "n too large")
    branch, packed = check.body.seq
    assert dump(branch.then_case) == ("Evaluate", ("Call", "int32", "tir.call_extern", (("StringImm", "abort"),)))
    assert dump(branch.else_case) == ("Evaluate", I32(0))
    assert dump(packed) == ("Evaluate", ("Call", "int32", "tir.call_packed", (("StringImm", "my.notify"), "n:int32")))


def test_threads_and_attributes():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((1024,), "float32")):
            bx = T.launch_thread("blockIdx.x", 8)
            with T.attr({"pragma_import_c": "int x;"}):
                A[bx] = T.float32(0.0)
    '''))
    launch = func.body
    assert (launch.attr_key, launch.node.thread_tag, launch.node.iter_type, dump(launch.value)) == (
        "thread_extent", "blockIdx.x", "ThreadIndex", I32(8))
    pragma = launch.body
    assert (pragma.attr_key, dump(pragma.value), dump(pragma.node)) == (
        "pragma_import_c", ("StringImm", "int x;"), I32(0))
    assert pragma.body.indices[0] is launch.node.var


def test_legacy_allocate_and_buffer_alias():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((16,), "float32")):
            ptr = T.allocate([16], "float32", "global")
            tmp = T.Buffer((16,), "float32", data=ptr)
            for i in T.serial(16):
                tmp[i] = A[i]
    '''))
    allocate = func.body
    assert (allocate.buffer_var.name, allocate.dtype, allocate.scope) == ("ptr", "float32", "global")
    assert allocate.body.body.buffer.data is allocate.buffer_var


def test_calls_of_module_functions():
    scope = Scope()
    add = GlobalVar("add")
    scope.define("Module", ModuleRef("Module", {"add": add}))
    func = only_ok(src('''
        @T.prim_func
        def main(A: T.Buffer((8,), "float32")):
            Module.add(A.data)
    '''), scope)
    call = func.body.value
    assert call.op is add and call.args == (func.buffer_of(func.params[0]).data,)


def test_vector_stores():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((64,), "float32"), C: T.Buffer((16,), "int32")):
            for i in range(16):
                A[i * 4:i * 4 + 4] = T.Broadcast(T.float32(1.0), 4)
            C[0:16:2] = T.Broadcast(7, 8)
    '''))
    loop, store = func.body.seq
    assert dump(loop.body.indices) == (("Ramp", ("Mul", "i:int32", I32(4)), I32(1), 4),)
    assert dump(store.indices) == (("Ramp", I32(0), I32(2), 8),)


def test_host_code_pointers():
    func = only_ok(src('''
        @T.prim_func
        def f(args: T.handle, n: T.int32) -> T.int32:
            assert not T.isnullptr(args), ("TypeError", ["args pointer is NULL"])
            h: T.let[T.handle] = T.handle_add_byte_offset(T.tvm_struct_get(args, 0, 15, T.handle().ty), 24)
            H = T.decl_buffer((4,), "int64", data=T.reinterpret(T.handle("int64", "global").ty, h))
            with T.attr(H, "storage_alignment", 64):
                T.attr("default", "device_id", n)
                H[0] = T.int64(1)
            return 0
    '''))
    check = func.body
    let_h = check.body
    assert dump(let_h.value) == ("Call", "handle", "tir.handle_add_byte_offset", (
        ("Call", "handle", "tir.tvm_struct_get", ("args:handle", I32(0), I32(15))), I32(24)))
    let_data = let_h.body
    declared = let_data.body
    assert declared.buffer.data is let_data.var and dump(let_data.value) == (
        "Call", "handle", "tir.reinterpret", ("h:handle",))
    alignment = declared.body.seq[0]
    assert alignment.node is declared.buffer and alignment.body.node == "default"
    assert dump(declared.body.seq[1]) == ("Evaluate", ("Call", "int32", "tir.ret", (I32(0),)))


def test_stored_values_are_cast_to_the_buffer_type():
    func = only_ok(src('''
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float64"), C: T.Buffer((4,), "int32"), n: T.int64):
            A[0] = B[0]
            C[1] = n
            C[2] = 7
    '''))
    first, second, third = func.body.seq
    assert dump(first.value) == ("Cast", "float32", ("BufferLoad", "buffer B", (I32(0),)))
    assert dump(second.value) == ("Cast", "int32", "n:int64")
    assert dump(third.value) == I32(7)
