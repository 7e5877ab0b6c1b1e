"""vm.builtin.*: each builtin through bytecode, and its error messages."""

import numpy as np
import pytest

from relax.runtime import Closure, DataType, ShapeTuple, VMError, get_global_func, register_func
from relax.vm import ExecBuilder, VirtualMachine
from relax.vm.machine.builtins import BUILTINS
from vm_programs import round_trip

EXPECTED = {
    "alloc_shape_heap", "match_shape", "make_shape", "match_prim_value", "check_tensor_info", "check_shape_info",
    "check_tuple_info", "check_func_info", "alloc_storage", "alloc_tensor", "null_value", "copy", "make_tuple",
    "tuple_getitem", "shape_of", "reshape", "read_if_cond", "invoke_closure", "make_closure", "to_device",
}


def test_builtins_are_registered_under_tvm_names():
    assert {f"vm.builtin.{name}" for name in EXPECTED} <= set(BUILTINS)
    for name, func in BUILTINS.items():
        assert get_global_func(name) is func


def _run(name, args, inputs=(), memory="pooled"):
    """Runs one call of builtin `name` on `args` (with %i for inputs) and returns its result."""
    ib = ExecBuilder()
    with ib.function("main", num_inputs=len(inputs)):
        ib.emit_call(name, args=[arg(ib) if callable(arg) else arg for arg in args], dst=ib.r(len(inputs)))
        ib.emit_ret(ib.r(len(inputs)))
    return VirtualMachine(round_trip(ib.get()), memory=memory)["main"](*inputs)


def reg(i):
    return lambda ib: ib.r(i)


def imm(v):
    return lambda ib: ib.imm(v)


VM = lambda ib: ib.r("vm")  # noqa: E731


def test_shape_heap_match_and_make_all_modes():
    heap = _run("vm.builtin.alloc_shape_heap", [VM, imm(3)])
    assert heap.dtype == np.int64 and heap.shape == (3,)
    match = get_global_func("vm.builtin.match_shape")
    make = get_global_func("vm.builtin.make_shape")
    # store n (mode 1), assert 4 (mode 0), skip (mode 2), then assert equal to stored (mode 3)
    match(np.zeros((5, 4, 9)), heap, 3, 1, 0, 0, 4, 2, 0, "ctx")
    assert heap[0] == 5
    match(ShapeTuple([5, 4, 1]), heap, 3, 3, 0, 0, 4, 2, 0, "ctx")
    assert make(heap, 3, 1, 0, 0, 7, 1, 0) == ShapeTuple([5, 7, 5])
    with pytest.raises(VMError, match=r"ctx match_cast error: shape\[0\] mismatch to a previous populated value: "
                                      r"expected 5, got 6"):
        match(ShapeTuple([6, 4, 1]), heap, 3, 3, 0, 0, 4, 2, 0, "ctx")
    with pytest.raises(VMError, match="shape size mismatch: expected 3 dimensions, got 2"):
        match(ShapeTuple([6, 4]), heap, 3, 3, 0, 0, 4, 2, 0, "ctx")
    with pytest.raises(VMError, match="shape heap index 9 is outside the heap"):
        match(ShapeTuple([6]), heap, 1, 1, 9, "ctx")
    with pytest.raises(VMError, match="the shape heap is needed but none was allocated"):
        match(ShapeTuple([6]), None, 1, 1, 0, "ctx")
    match(ShapeTuple([2]), None, 1, 0, 2, None)  # immediates only: no heap needed


def test_match_and_make_prim_value():
    heap = np.zeros(2, np.int64)
    match = get_global_func("vm.builtin.match_prim_value")
    match(9, heap, 1, 1, "ctx")
    match(9, heap, 3, 1, "ctx")
    match(4, heap, 0, 4, "ctx")
    match(4, heap, 2, 0, "ctx")
    with pytest.raises(VMError, match="PrimValue mismatch to a previous populated value: expected 9, got 8"):
        match(8, heap, 3, 1, "ctx")
    with pytest.raises(VMError, match="PrimValue mismatch to specified constant: expected 3, got 8"):
        match(8, heap, 0, 3, "ctx")
    make = get_global_func("vm.builtin.make_prim_value")
    assert make(heap, 1, 1) == 9 and make(heap, 0, 12) == 12


def test_check_infos():
    check_shape = get_global_func("vm.builtin.check_shape_info")
    check_shape(ShapeTuple([1, 2]), 2, "c")
    check_shape(ShapeTuple([1, 2]), -1, "c")
    with pytest.raises(VMError, match="c expected Shape with ndim 3 but got 2"):
        check_shape(ShapeTuple([1, 2]), 3, "c")
    with pytest.raises(VMError, match="c expected a Shape but got Tuple"):
        check_shape((1, 2), 2, "c")
    check_tensor = get_global_func("vm.builtin.check_tensor_info")
    check_tensor(np.zeros((2, 2), np.float16), 2, DataType.parse("float16"), "c")
    check_tensor(np.zeros((2, 2), np.bool_), -1, "c")
    with pytest.raises(VMError, match="expected Tensor with dtype bool but got int8"):
        check_tensor(np.zeros(2, np.int8), 1, DataType.parse("bool"), "c")
    check_func = get_global_func("vm.builtin.check_func_info")
    check_func(Closure("f", func_index=0), "c")
    check_func(len, "c")
    with pytest.raises(VMError, match="c expected a Function but got Tensor"):
        check_func(np.zeros(1), "c")
    check_prim = get_global_func("vm.builtin.check_prim_value_info")
    check_prim(3, DataType.parse("int64"), "c")
    with pytest.raises(VMError, match="expected a PrimValue of dtype int64 but got Tensor"):
        check_prim(np.zeros(1), DataType.parse("int64"), "c")


@pytest.mark.parametrize("memory", ["pooled", "naive"])
def test_alloc_storage_and_tensors(memory):
    ib = ExecBuilder()
    with ib.function("main", num_inputs=0):
        ib.emit_call("vm.builtin.alloc_storage", args=[ib.r("vm"), (48,), ib.imm(0), DataType.parse("uint8"),
                                                       "global"], dst=ib.r(0))
        ib.emit_call("vm.builtin.alloc_tensor", args=[ib.r(0), ib.imm(0), (2, 3), DataType.parse("float32")],
                     dst=ib.r(1))
        ib.emit_call("vm.builtin.alloc_tensor", args=[ib.r(0), ib.imm(24), (3,), DataType.parse("float64")],
                     dst=ib.r(2))
        ib.emit_call("vm.builtin.make_tuple", args=[ib.r(1), ib.r(2)], dst=ib.r(3))
        ib.emit_ret(ib.r(3))
    vm = VirtualMachine(round_trip(ib.get()), memory=memory)
    a, b = vm["main"]()
    assert a.shape == (2, 3) and a.dtype == np.float32 and b.dtype == np.float64
    a[...] = 1
    b[...] = 2
    assert a.sum() == 6 and b.sum() == 6  # the two views do not overlap
    c, _ = vm["main"]()
    assert not np.shares_memory(a, c)  # a is alive, so its storage is not reused


def test_alloc_tensor_outside_storage_is_an_error():
    storage = get_global_func("vm.builtin.alloc_storage")(VirtualMachine(ExecBuilder().get()), (8,), 0, "uint8")
    with pytest.raises(VMError, match="16 bytes at offset 0 do not fit in a storage of 8 bytes"):
        get_global_func("vm.builtin.alloc_tensor")(storage, 0, (4,), "float32")


def test_values_builtins():
    x = np.arange(6, dtype=np.int32)
    assert _run("vm.builtin.shape_of", [reg(0)], [x]) == ShapeTuple([6])
    reshaped = _run("vm.builtin.reshape", [reg(0), (2, 3)], [x])
    assert reshaped.shape == (2, 3) and np.shares_memory(reshaped, x)
    with pytest.raises(VMError, match=r"cannot view a tensor of shape \(6,\) as shape \(4,\)"):
        _run("vm.builtin.reshape", [reg(0), (4,)], [x])
    assert _run("vm.builtin.null_value", []) is None
    assert _run("vm.builtin.copy", [reg(0)], [x]) is x
    assert _run("vm.builtin.make_tuple", [reg(0), imm(3)], [x])[1] == 3
    assert _run("vm.builtin.tuple_getitem", [reg(0), imm(1)], [(1, 2)]) == 2
    with pytest.raises(VMError, match="index 2 is out of range for a Tuple of 2"):
        _run("vm.builtin.tuple_getitem", [reg(0), imm(2)], [(1, 2)])
    moved = _run("vm.builtin.to_device", [reg(0), imm(1), imm(0)], [x])
    assert np.array_equal(moved, x) and not np.shares_memory(moved, x)
    with pytest.raises(VMError, match="device type 7 is not supported"):
        _run("vm.builtin.to_device", [reg(0), imm(7), imm(0)], [x])


@pytest.mark.parametrize("cond,expected", [
    (0, False), (3, True), (np.array(True), True), (np.array([0], np.int8), False), (np.array(5, np.uint64), True),
])
def test_read_if_cond(cond, expected):
    assert _run("vm.builtin.read_if_cond", [reg(0)], [cond]) is expected


def test_read_if_cond_refuses_floats():
    with pytest.raises(VMError, match="integer or bool condition, got float32"):
        _run("vm.builtin.read_if_cond", [reg(0)], [np.array(1.0, np.float32)])


def test_make_closure_of_packed_function_and_invoke():
    register_func("test.vm.concat3", lambda a, b, c: f"{a}{b}{c}", override=True)
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1):
        ib.emit_call("vm.builtin.make_closure", args=[ib.f("test.vm.concat3"), "b", "c"], dst=ib.r(1))
        ib.emit_call("vm.builtin.invoke_closure", args=[ib.r("vm"), ib.r(1), ib.r(0)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    assert VirtualMachine(round_trip(ib.get()))["main"]("a") == "abc"


def test_call_tir_dyn_unpacks_the_shape():
    register_func("test.vm.shape_kernel", lambda x, n, m: x.size + n * 10 + m * 100, override=True)
    result = _run("vm.builtin.call_tir_dyn", [lambda ib: ib.f("test.vm.shape_kernel"), reg(0), (2, 3)],
                  [np.zeros(4)])
    assert result == 4 + 20 + 300


def test_shape_and_prim_value_builtins_through_bytecode():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=3, param_names=["s", "n", "f"]):
        ib.emit_call("vm.builtin.alloc_shape_heap", args=[ib.r("vm"), ib.imm(2)], dst=ib.r(3))
        ib.emit_call("vm.builtin.check_shape_info", args=[ib.r(0), ib.imm(2), "param s"])
        ib.emit_call("vm.builtin.check_prim_value_info", args=[ib.r(1), DataType.parse("int64"), "param n"])
        ib.emit_call("vm.builtin.check_func_info", args=[ib.r(2), "param f"])
        ib.emit_call("vm.builtin.match_shape", args=[ib.r(0), ib.r(3), ib.imm(2), ib.imm(1), ib.imm(0), ib.imm(2),
                                                     ib.imm(0), "param s"])
        ib.emit_call("vm.builtin.match_prim_value", args=[ib.r(1), ib.r(3), ib.imm(1), ib.imm(1), "param n"])
        ib.emit_call("vm.builtin.make_prim_value", args=[ib.r(3), ib.imm(1), ib.imm(1)], dst=ib.r(4))
        ib.emit_call("vm.builtin.make_shape", args=[ib.r(3), ib.imm(3), ib.imm(1), ib.imm(1), ib.imm(0), ib.imm(7),
                                                    ib.imm(1), ib.imm(0)], dst=ib.r(5))
        ib.emit_call("vm.builtin.invoke_closure", args=[ib.r("vm"), ib.r(2), ib.r(5)], dst=ib.r(6))
        ib.emit_call("vm.builtin.make_tuple", args=[ib.r(4), ib.r(6)], dst=ib.r(7))
        ib.emit_ret(ib.r(7))
    vm = VirtualMachine(round_trip(ib.get()))
    identity = lambda value: value  # noqa: E731
    assert vm["main"](ShapeTuple([5, 9]), 3, identity) == (3, ShapeTuple([3, 7, 5]))
    with pytest.raises(VMError, match="param s expected Shape with ndim 2 but got 1"):
        vm["main"](ShapeTuple([5]), 3, identity)
    with pytest.raises(VMError, match="param n expected a PrimValue of dtype int64 but got String"):
        vm["main"](ShapeTuple([5, 9]), "3", identity)
    with pytest.raises(VMError, match="param f expected a Function but got Int"):
        vm["main"](ShapeTuple([5, 9]), 3, 4)


def test_string_offset_and_tuple_reset_builtins():
    get_global_func("vm.builtin.check_string_info")("ok", "c")
    with pytest.raises(VMError, match="c expected a String but got Int"):
        _run("vm.builtin.check_string_info", [reg(0), "c"], [3])
    strided = np.arange(12.0).reshape(3, 4)[:, 1]
    compact = _run("vm.builtin.ensure_zero_offset", [reg(0)], [strided])
    assert compact.flags.c_contiguous and np.array_equal(compact, [1.0, 5.0, 9.0])
    assert _run("vm.builtin.tuple_reset_item", [reg(0), imm(1)], [(1, 2)]) is None


@pytest.mark.parametrize("context, where", [
    ('ErrorContext(fn=main, loc=match_cast, var=b, annotation=R.Tensor((), dtype="float32")) ',
     "function 'main', match_cast of 'b' to R.Tensor((), dtype=\"float32\")"),
    ('ErrorContext(fn=main, loc=param[1], param=y, annotation=R.Tensor((5,), dtype="float32")) ',
     "function 'main', parameter 'y' (R.Tensor((5,), dtype=\"float32\"))"),
    ('ErrorContext(fn=f, loc=return, annotation=R.Tensor((5,), dtype="float32")) ',
     "function 'f', its result (R.Tensor((5,), dtype=\"float32\"))"),
])
def test_error_contexts_are_put_in_words(context, where):
    # relaxrun printed "error: ValueError: ErrorContext(fn=main, loc=match_cast, ...)  expected ..." (issue 16).
    check_tensor = get_global_func("vm.builtin.check_tensor_info")
    with pytest.raises(VMError) as info:
        check_tensor(np.zeros(5, np.float32), 0, DataType.parse("float32"), context)
    assert info.value.message == f"{where}: expected Tensor with ndim 0 but got 1 (shape (5,))"
