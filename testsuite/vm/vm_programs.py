"""Hand-built executables shared by the VM tests: every program the tests run.

Each builder returns a fresh Executable. PROGRAMS lists them all, so that the
save/load, listing/assembly and as_python round trips cover every test executable.
The packed functions they call (test.vm.*) are registered by `register_callbacks`.
"""

from __future__ import annotations

import numpy as np

from relax.runtime import DataType, ShapeTuple, register_func
from relax.vm import ExecBuilder


def round_trip(exe):
    """Checks that `exe` saves, loads and lists back to the same bytes; returns the loaded copy.

    Every executable a test runs goes through this, so the round trips cover them all.
    """
    from relax.vm import Executable
    from relax.vm.codegen.assembler import assemble

    data = exe.save_to_bytes()
    loaded = Executable.load_from_bytes(data)
    assert loaded.save_to_bytes() == data
    assert assemble(exe.as_text()).save_to_bytes() == data
    loaded.imports = list(exe.imports)
    return loaded


def register_callbacks() -> None:
    callbacks = {
        "test.vm.add": lambda a, b: a + b,
        "test.vm.sub": lambda a, b: a - b,
        "test.vm.mul": lambda a, b: a * b,
        "test.vm.le": lambda a, b: int(a <= b),
        "test.vm.lt": lambda a, b: int(a < b),
        "test.vm.noop": lambda *args: None,
        # Destination-passing kernel: out = a + b, written in place.
        "test.vm.add_dps": lambda a, b, out: np.add(a, b, out=out),
        # The kernels of tvm_add_multiply, destination-passing.
        "shape_func": _shape_func,
        "add": lambda a, b, out: np.add(a, b, out=out),
        "multiply": lambda a, b, out: np.multiply(a, b, out=out),
    }
    for name, func in callbacks.items():
        register_func(name, func, override=True)


def add_two():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=2, param_names=["x", "y"]):
        ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    return ib.get()


def while_sum():
    """sum(n) = 1 + 2 + ... + n with a loop of If and Goto."""
    ib = ExecBuilder()
    with ib.function("sum", num_inputs=1, param_names=["n"]):
        ib.emit_call("vm.builtin.copy", args=[ib.imm(1)], dst=ib.r(1))          # 0  i = 1
        ib.emit_call("vm.builtin.copy", args=[ib.imm(0)], dst=ib.r(2))          # 1  acc = 0
        ib.emit_call("test.vm.le", args=[ib.r(1), ib.r(0)], dst=ib.r(3))        # 2  cond = i <= n
        ib.emit_if(ib.r(3), 4)                                                   # 3  if not cond: goto 7
        ib.emit_call("test.vm.add", args=[ib.r(2), ib.r(1)], dst=ib.r(2))       # 4  acc += i
        ib.emit_call("test.vm.add", args=[ib.r(1), ib.imm(1)], dst=ib.r(1))     # 5  i += 1
        ib.emit_goto(-4)                                                         # 6  goto 2
        ib.emit_ret(ib.r(2))                                                     # 7
    return ib.get()


def recursion():
    """fact(n) and fib(n), each calling itself through bytecode calls."""
    ib = ExecBuilder()
    with ib.function("fact", num_inputs=1, param_names=["n"]):
        ib.emit_call("test.vm.le", args=[ib.r(0), ib.imm(1)], dst=ib.r(1))
        ib.emit_if(ib.r(1), 3)
        ib.emit_call("vm.builtin.copy", args=[ib.imm(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
        ib.emit_call("test.vm.sub", args=[ib.r(0), ib.imm(1)], dst=ib.r(3))
        ib.emit_call("fact", args=[ib.r(3)], dst=ib.r(4))
        ib.emit_call("test.vm.mul", args=[ib.r(0), ib.r(4)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with ib.function("fib", num_inputs=1, param_names=["n"]):
        ib.emit_call("test.vm.lt", args=[ib.r(0), ib.imm(2)], dst=ib.r(1))
        ib.emit_if(ib.r(1), 2)
        ib.emit_ret(ib.r(0))
        ib.emit_call("test.vm.sub", args=[ib.r(0), ib.imm(1)], dst=ib.r(2))
        ib.emit_call("fib", args=[ib.r(2)], dst=ib.r(3))
        ib.emit_call("test.vm.sub", args=[ib.r(0), ib.imm(2)], dst=ib.r(2))
        ib.emit_call("fib", args=[ib.r(2)], dst=ib.r(4))
        ib.emit_call("test.vm.add", args=[ib.r(3), ib.r(4)], dst=ib.r(5))
        ib.emit_ret(ib.r(5))
    return ib.get()


def closures():
    """adder(x, y) = x + y; main(a, b) makes a closure of adder bound to b and invokes it on a."""
    ib = ExecBuilder()
    ib.declare_function("adder", kind="vm_func")
    with ib.function("main", num_inputs=2, param_names=["a", "b"]):
        ib.emit_call("vm.builtin.make_closure", args=[ib.f("adder"), ib.r(1)], dst=ib.r(2))
        ib.emit_call("vm.builtin.invoke_closure", args=[ib.r("vm"), ib.r(2), ib.r(0)], dst=ib.r(3))
        ib.emit_ret(ib.r(3))
    with ib.function("get_adder", num_inputs=0):
        ib.emit_call("vm.builtin.copy", args=[ib.f("adder")], dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    with ib.function("adder", num_inputs=2, param_names=["x", "y"]):
        ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    return ib.get()


def closure_recursion():
    """down(n, k) = 0 if n <= 0 else k(n - 1, k), where k is down's own closure."""
    ib = ExecBuilder()
    ib.declare_function("down", kind="vm_func")
    with ib.function("main", num_inputs=1, param_names=["n"]):
        ib.emit_call("vm.builtin.copy", args=[ib.f("down")], dst=ib.r(1))
        ib.emit_call("vm.builtin.invoke_closure", args=[ib.r("vm"), ib.r(1), ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with ib.function("down", num_inputs=2, param_names=["n", "k"]):
        ib.emit_call("test.vm.le", args=[ib.r(0), ib.imm(0)], dst=ib.r(2))
        ib.emit_if(ib.r(2), 2)
        ib.emit_ret(ib.r(0))
        ib.emit_call("test.vm.sub", args=[ib.r(0), ib.imm(1)], dst=ib.r(3))
        ib.emit_call("vm.builtin.invoke_closure", args=[ib.r("vm"), ib.r(1), ib.r(3), ib.r(1)], dst=ib.r(4))
        ib.emit_ret(ib.r(4))
    with ib.function("bad_arity", num_inputs=0):
        ib.emit_call("vm.builtin.invoke_closure", args=[ib.r("vm"), ib.f("down"), ib.imm(1)], dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    return ib.get()


def tuples():
    """swap(x, y) -> (y, x); first(t) -> t[0]; nested() -> a constant nested tuple."""
    ib = ExecBuilder()
    with ib.function("swap", num_inputs=2, param_names=["x", "y"]):
        ib.emit_call("vm.builtin.make_tuple", args=[ib.r(1), ib.r(0)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with ib.function("first", num_inputs=1, param_names=["t"]):
        ib.emit_call("vm.builtin.check_tuple_info", args=[ib.r(0), ib.imm(2), "first: param t"])
        ib.emit_call("vm.builtin.tuple_getitem", args=[ib.r(0), ib.imm(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    with ib.function("nested", num_inputs=0):
        ib.emit_call("vm.builtin.copy", args=[((1, 2), ShapeTuple([3]), "s", 2.5, None, True)], dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    return ib.get()


ERR_CTX = 'ErrorContext(fn=main, loc=param[0], param=x, annotation=R.Tensor((n, 4), dtype="float32"))'


def shape_heap():
    """main(x: Tensor((n, 4), float32)) -> Tensor((n, 4)): checks x, stores n, allocates the result.

    The result is computed by the destination-passing kernel test.vm.add_dps(x, x, out).
    """
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("vm.builtin.alloc_shape_heap", args=[ib.r("vm"), ib.imm(1)], dst=ib.r(1))
        ib.set_source_location("model.relax:2:14")
        ib.emit_call("vm.builtin.check_tensor_info",
                     args=[ib.r(0), ib.imm(2), DataType.parse("float32"), ERR_CTX])
        ib.emit_call("vm.builtin.match_shape",
                     args=[ib.r(0), ib.r(1), ib.imm(2), ib.imm(1), ib.imm(0), ib.imm(0), ib.imm(4), ERR_CTX])
        ib.set_source_location(None)
        ib.emit_call("vm.builtin.make_shape", args=[ib.r(1), ib.imm(2), ib.imm(1), ib.imm(0), ib.imm(0),
                                                    ib.imm(4)], dst=ib.r(2))
        ib.emit_call("vm.builtin.make_shape", args=[ib.r(1), ib.imm(1), ib.imm(1), ib.imm(0)], dst=ib.r(3))
        # Storage of n * 16 bytes: a shape in bytes would need arithmetic on n; allocate n*4 float32.
        ib.emit_call("vm.builtin.alloc_storage", args=[ib.r("vm"), ib.r(2), ib.imm(0),
                                                       DataType.parse("float32"), "global"], dst=ib.r(4))
        ib.emit_call("vm.builtin.alloc_tensor", args=[ib.r(4), ib.imm(0), ib.r(2), DataType.parse("float32")],
                     dst=ib.r(5))
        ib.emit_call("test.vm.add_dps", args=[ib.r(0), ib.r(0), ib.r(5)])
        ib.emit_call("vm.builtin.match_shape", args=[ib.r(3), ib.r(1), ib.imm(1), ib.imm(3), ib.imm(0), ERR_CTX])
        ib.emit_ret(ib.r(5))
    return ib.get()


def constants():
    """Returns each kind of constant: tensors of several dtypes, shapes, strings, numbers."""
    ib = ExecBuilder()
    values = [
        np.arange(6, dtype=np.float32).reshape(2, 3) / 3,
        np.array([0.5, -1.25, np.inf], dtype=np.float16),
        np.array([[True, False]]),
        np.arange(-4, 4, dtype=np.int8),
        np.array(7, dtype=np.int64),
        np.random.default_rng(0).standard_normal((20, 20)),  # printed as base64
        np.zeros((0, 3), dtype=np.uint16),
        ShapeTuple([2, 3]),
        ShapeTuple([]),
        "hello \"world\"\n",
        1 << 60,
        -3.75,
        float("nan"),
        DataType.parse("bfloat16"),
        DataType.parse("float32x4"),
        (np.ones(2, dtype=np.int32), (ShapeTuple([1]), ())),
    ]
    with ib.function("get", num_inputs=1, param_names=["i"]):
        # A jump table would need arithmetic; instead return the tuple of all constants.
        ib.emit_call("vm.builtin.make_tuple", args=[ib.convert_constant(v) for v in values], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    ib.set_memory_scope(ib.c(0), "global")
    ib.declare_function("kernel", kind="vm_tir_func", num_inputs=2, param_names=["a", "b"])
    return ib.get()


def noop_loop(iterations: int = 1000):
    """A loop whose body is 8 calls to a no-op packed function."""
    ib = ExecBuilder()
    with ib.function("main", num_inputs=0):
        ib.emit_call("vm.builtin.copy", args=[ib.imm(0)], dst=ib.r(0))
        ib.emit_call("test.vm.lt", args=[ib.r(0), ib.imm(iterations)], dst=ib.r(1))  # 1
        ib.emit_if(ib.r(1), 11)                                                      # 2 -> 13
        for _ in range(8):
            ib.emit_call("test.vm.noop", args=[ib.r(0)])                             # 3..10
        ib.emit_call("test.vm.add", args=[ib.r(0), ib.imm(1)], dst=ib.r(0))          # 11
        ib.emit_goto(-11)                                                            # 12 -> 1
        ib.emit_ret(ib.r(0))                                                         # 13
    return ib.get()


def tvm_add_multiply():
    """The bytecode TVM 0.27 generates for main(x: (n, 4), y: (4,)) -> ((x + y) * (x + y), shape).

    Written from TVM's own listing (Inputs/tvm_add_multiply.as_text) with the kernels
    `shape_func`, `add` and `multiply` registered by register_callbacks.
    """
    ctx_x = 'ErrorContext(fn=main, loc=param[0], param=x, annotation=R.Tensor((n, 4), dtype="float32")) '
    ctx_y = 'ErrorContext(fn=main, loc=param[1], param=y, annotation=R.Tensor((4,), dtype="float32")) '
    ctx_ret = ('ErrorContext(fn=main, loc=return, annotation=T.Tuple(R.Tensor((n, T.int64(4)), dtype="float32"), '
               'R.Shape([n, T.int64(4)]))) ')
    ib = ExecBuilder()
    f32, u8 = DataType.parse("float32"), DataType.parse("uint8")
    with ib.function("main", num_inputs=2, param_names=["x", "y"]):
        ib.emit_call("vm.builtin.alloc_shape_heap", args=[ib.r("vm"), ib.imm(3)], dst=ib.r(2))
        ib.emit_call("vm.builtin.check_tensor_info", args=[ib.r(0), ib.imm(2), f32, ctx_x])
        ib.emit_call("vm.builtin.check_tensor_info", args=[ib.r(1), ib.imm(1), f32, ctx_y])
        ib.emit_call("vm.builtin.match_shape", args=[ib.r(0), ib.r(2), ib.imm(2), ib.imm(1), ib.imm(0), ib.imm(0),
                                                     ib.imm(4), ctx_x])
        ib.emit_call("vm.builtin.match_shape", args=[ib.r(1), ib.r(2), ib.imm(1), ib.imm(0), ib.imm(4), ctx_y])
        ib.emit_call("shape_func", args=[ib.r(2)])
        for storage, shape, tensor, heap_slot, kernel, inputs in (
                (4, 5, 6, 1, "add", [ib.r(0), ib.r(1)]), (8, 9, 10, 2, "multiply", [ib.r(6), ib.r(6)])):
            ib.emit_call("vm.builtin.make_shape", args=[ib.r(2), ib.imm(1), ib.imm(1), ib.imm(heap_slot)],
                         dst=ib.r(storage - 1))
            ib.emit_call("vm.builtin.alloc_storage", args=[ib.r("vm"), ib.r(storage - 1), ib.imm(0), u8, "global"],
                         dst=ib.r(storage))
            ib.emit_call("vm.builtin.make_shape", args=[ib.r(2), ib.imm(2), ib.imm(1), ib.imm(0), ib.imm(0),
                                                        ib.imm(4)], dst=ib.r(shape))
            ib.emit_call("vm.builtin.alloc_tensor", args=[ib.r(storage), ib.imm(0), ib.r(shape), f32],
                         dst=ib.r(tensor))
            ib.emit_call("vm.builtin.null_value", args=[], dst=ib.r(storage))
            ib.emit_call(kernel, args=inputs + [ib.r(tensor)])
        ib.emit_call("vm.builtin.null_value", args=[], dst=ib.r(6))
        ib.emit_call("vm.builtin.shape_of", args=[ib.r(10)], dst=ib.r(11))
        ib.emit_call("vm.builtin.match_shape", args=[ib.r(10), ib.r(2), ib.imm(2), ib.imm(3), ib.imm(0), ib.imm(0),
                                                     ib.imm(4), ctx_ret])
        ib.emit_call("vm.builtin.make_tuple", args=[ib.r(10), ib.r(11)], dst=ib.r(12))
        ib.emit_ret(ib.r(12))
    return ib.get()


def _shape_func(heap):
    # heap[0] = n; the two storages hold n * 4 float32 values each.
    heap[1] = heap[0] * 16
    heap[2] = heap[0] * 16


PROGRAMS = {
    "add_two": add_two,
    "while_sum": while_sum,
    "recursion": recursion,
    "closures": closures,
    "closure_recursion": closure_recursion,
    "tuples": tuples,
    "shape_heap": shape_heap,
    "constants": constants,
    "noop_loop": noop_loop,
    "tvm_add_multiply": tvm_add_multiply,
}
