"""The VirtualMachine running hand-built executables: control flow, recursion, closures, the Python API."""

import sys

import numpy as np
import pytest

from relax.diagnostics import UserError
from relax.runtime import Closure, Frame, ShapeTuple, VMError, register_func, remove_global_func
from relax.vm import Executable, ExecBuilder, VirtualMachine, VMInstrumentReturnKind
from vm_programs import PROGRAMS, register_callbacks, round_trip

register_callbacks()


def _vm(name, **kwargs):
    # Every program runs from its reloaded bytes, so the loaded form is what is tested.
    return VirtualMachine(Executable.load_from_bytes(PROGRAMS[name]().save_to_bytes()), **kwargs)


def test_call_and_ret_on_arrays():
    x, y = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    np.testing.assert_array_equal(_vm("add_two")["main"](x, y), x + y)  # exact: small integers in float64


@pytest.mark.parametrize("n", [0, 1, 10, 1000])
def test_while_loop_sums_one_to_n(n):
    assert _vm("while_sum")["sum"](n) == n * (n + 1) // 2


def test_factorial_and_fibonacci():
    vm = _vm("recursion")
    assert vm["fact"](20) == 2432902008176640000
    assert vm["fib"](25) == 75025


def test_deep_recursion_does_not_use_python_recursion():
    # Deeper than Python's limit, which is set low here: relax.ir.visitor raises it on import,
    # and factorial(5 x 30000) on big ints would take seconds.
    import math
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        depth = sys.getrecursionlimit() * 5
        result = _vm("recursion")["fact"](depth)
    finally:
        sys.setrecursionlimit(limit)
    assert result == math.factorial(depth)


def test_closure_with_bound_argument():
    vm = _vm("closures")
    assert vm["main"](3, 4) == 7
    adder = vm["get_adder"]()
    assert isinstance(adder, Closure) and adder.func_name == "adder"
    assert vm.invoke_closure(adder, 2, 5) == 7
    bound = adder.bind_last_args((10,))
    assert vm.invoke_closure(bound, 1) == 11


def test_recursion_through_closures_stays_in_the_loop():
    vm = _vm("closure_recursion")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # relaxrun's; relax.ir.visitor raises it on import
    try:
        assert vm["main"](sys.getrecursionlimit() * 3) == 0
    finally:
        sys.setrecursionlimit(limit)
    with pytest.raises(VMError, match="closure of 'down' called with 1 arguments, it takes 2"):
        vm["bad_arity"]()


@pytest.mark.parametrize("n", [1, 5])
def test_tvm_generated_bytecode_runs(n):
    x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
    y = np.arange(4, dtype=np.float32)
    w, shape = _vm("tvm_add_multiply")["main"](x, y)
    np.testing.assert_allclose(w, (x + y) * (x + y), rtol=1e-6, atol=0)  # float32, same operation order
    assert shape == ShapeTuple([n, 4])
    with pytest.raises(VMError, match=r"^function 'main', parameter 'y' \(R.Tensor\(\(4,\), dtype=\"float32\"\)\): "
                                      r"expected Tensor with ndim 1 but got 2"):
        _vm("tvm_add_multiply")["main"](x, x)


def test_tuples_stay_tuples_and_shapes_stay_shapes():
    vm = _vm("tuples")
    x = np.zeros(2)
    swapped = vm["swap"](x, 5)
    assert type(swapped) is tuple and swapped[0] == 5 and swapped[1] is x
    assert vm["first"]((7, 8)) == 7
    nested = vm["nested"]()
    assert nested == ((1, 2), ShapeTuple([3]), "s", 2.5, None, True)
    assert isinstance(nested[1], ShapeTuple) and not isinstance(nested[0], ShapeTuple)


def test_tuple_info_is_checked():
    with pytest.raises(VMError, match="first: param t expected a Tuple with 2 elements but got a Tuple with 3"):
        _vm("tuples")["first"]((1, 2, 3))
    with pytest.raises(VMError, match="expected a Tuple but got Shape"):
        _vm("tuples")["first"](ShapeTuple([1, 2]))


@pytest.mark.parametrize("memory", ["pooled", "naive"])
def test_shape_heap_with_symbolic_dimension(memory):
    vm = _vm("shape_heap", memory=memory)
    for n in (1, 3, 7):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        out = vm["main"](x)
        assert out.shape == (n, 4) and out.dtype == np.float32
        np.testing.assert_array_equal(out, x + x)  # exact: x + x is exact in float32


def test_shape_mismatch_names_function_parameter_expected_and_got():
    vm = _vm("shape_heap")
    with pytest.raises(VMError) as info:
        vm["main"](np.ones((3, 5), np.float32))
    message = str(info.value)
    assert message.startswith("function 'main', parameter 'x' (R.Tensor((n, 4), dtype=\"float32\")): ")
    assert "shape[1] mismatch to specified constant: expected 4, got 5" in message
    assert info.value.backtrace == (Frame("main", 2, "model.relax:2:14"),)
    assert info.value.format_backtrace() == "  [0] main+0002  model.relax:2:14\n"
    with pytest.raises(VMError, match=r"expected Tensor with dtype float32 but got float16"):
        vm["main"](np.ones((3, 4), np.float16))
    with pytest.raises(VMError, match=r"parameter 'x'.*expected Tensor with ndim 2 but got 1"):
        vm["main"](np.ones(4, np.float32))
    with pytest.raises(VMError, match="expected a Tensor but got Int"):
        vm["main"](3)


def test_constants_are_returned_exactly_and_read_only():
    exe = PROGRAMS["constants"]()
    loaded = round_trip(exe)
    values = VirtualMachine(loaded)["get"](0)
    assert len(values) == 16
    np.testing.assert_array_equal(values[0], np.arange(6, dtype=np.float32).reshape(2, 3) / 3)
    assert values[1].dtype == np.float16 and values[2].dtype == np.bool_
    assert values[4].shape == () and values[4] == 7
    assert not values[0].flags.writeable
    assert values[7] == ShapeTuple([2, 3]) and values[10] == 1 << 60
    # Two VMs share the constants loaded once per executable.
    assert VirtualMachine(loaded)["get"](0)[0] is values[0]


def test_unresolved_packed_function_is_reported_by_name():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=0):
        ib.emit_call("no.such.function", args=[], dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    vm = VirtualMachine(round_trip(ib.get()))
    assert vm.unresolved_functions == ["no.such.function"]
    with pytest.raises(VMError, match="packed function 'no.such.function' is not found"):
        vm["main"]()
    register_func("no.such.function", lambda: 42, override=True)
    try:
        assert vm["main"]() == 42  # registered after the VM was made: found at the call
    finally:
        remove_global_func("no.such.function")


class _Library:
    def __init__(self, functions):
        self.functions = functions

    def get_function(self, name):
        return self.functions.get(name)


def test_imports_are_searched_before_the_registry():
    exe = PROGRAMS["add_two"]()
    exe.import_module(_Library({"test.vm.add": lambda a, b: a * b}))
    assert VirtualMachine(round_trip(exe))["main"](3, 4) == 12
    assert VirtualMachine(PROGRAMS["add_two"]())["main"](3, 4) == 7


def test_compiled_tir_function_comes_from_imports():
    ib = ExecBuilder()
    ib.declare_function("fused", kind="vm_tir_func", num_inputs=2)
    with ib.function("main", num_inputs=2):
        ib.emit_call("fused", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    exe = ib.get()
    exe.import_module(_Library({"__vmtir__fused": lambda vm, a, b: (a - b, isinstance(vm, VirtualMachine))}))
    assert VirtualMachine(round_trip(exe))["main"](5, 2) == (3, True)


def test_packed_function_errors_carry_a_vm_backtrace():
    def fail(*args):
        raise ValueError("kernel exploded")

    register_func("test.vm.fail", fail, override=True)
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1):
        ib.emit_call("inner", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    with ib.function("inner", num_inputs=1):
        ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(1))
        ib.set_source_location("model.relax:9:3")
        ib.emit_call("test.vm.fail", args=[ib.r(1)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    with pytest.raises(VMError, match="ValueError: kernel exploded") as info:
        VirtualMachine(round_trip(ib.get()))["main"](1)
    assert info.value.backtrace == (Frame("main", 0), Frame("inner", 1, "model.relax:9:3"))
    assert info.value.format_backtrace() == "  [0] main+0000\n  [1] inner+0001  model.relax:9:3\n"


def test_vm_error_subclasses_keep_their_class():
    class KernelFailure(VMError):
        pass

    def fail(*args):
        raise KernelFailure("bad kernel arguments")

    register_func("test.vm.fail_kernel", fail, override=True)
    ib = ExecBuilder()
    with ib.function("main", num_inputs=0):
        ib.emit_call("test.vm.fail_kernel", args=[], dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    with pytest.raises(KernelFailure, match="bad kernel arguments") as info:
        VirtualMachine(round_trip(ib.get()))["main"]()
    assert info.value.backtrace == (Frame("main", 0),)


def test_python_api_argument_checks():
    vm = _vm("add_two")
    with pytest.raises(UserError, match=r"function 'main' takes 2 arguments \(x, y\), got 1"):
        vm["main"](1)
    with pytest.raises(UserError, match="no function 'nope'"):
        vm["nope"]
    assert vm["main"](y=1, x=2) == 3
    with pytest.raises(UserError, match="has no parameter 'z'"):
        vm["main"](1, z=2)
    non_contiguous = np.arange(12.0).reshape(3, 4).T
    assert vm["main"](non_contiguous, 0.0).flags.c_contiguous


def test_function_arity_and_parameter_names():
    vm = _vm("add_two")
    assert vm.get_function_arity("main") == 2
    assert [vm.get_function_param_name("main", i) for i in range(2)] == ["x", "y"]
    with pytest.raises(UserError, match="no parameter name at index 2"):
        vm.get_function_param_name("main", 2)


def test_stateful_api():
    vm = _vm("add_two")
    vm.set_input("main", np.array([1.0]), y=np.array([2.0]))
    vm.invoke_stateful("main")
    np.testing.assert_array_equal(vm.get_outputs("main"), [3.0])
    with pytest.raises(UserError, match="no outputs for 'other'"):
        vm.get_outputs("other")
    with pytest.raises(UserError, match="call set_input first"):
        _vm("add_two").invoke_stateful("main")


def test_save_function():
    vm = _vm("add_two")
    vm.save_function("main", "saved", 2, 3)
    assert vm["saved"]() == 5
    vm.save_function("main", "quiet", 2, 3, include_return=False)
    assert vm["quiet"]() is None


def test_instrument_sees_every_call_and_can_skip():
    vm = _vm("while_sum")
    seen = []

    def instrument(func, name, before_run, ret_value, *args):
        seen.append((name, before_run, ret_value if not before_run else None, args))
        if before_run and name == "test.vm.add" and args[1] == 1 and args[0] != 0:
            return VMInstrumentReturnKind.SKIP_RUN  # skips `i += 1`, except... see below
        return VMInstrumentReturnKind.NO_OP

    vm.set_instrument(instrument)
    # With n = 1: i=1, acc=0 -> acc += 1 (args (0, 1): runs) -> i += 1 (args (1, 1): skipped, i stays 1)
    # -> acc += 1 (args (1, 1): skipped) -> i += 1 skipped ... would loop forever, so stop via n = 0.
    assert vm["sum"](0) == 0
    assert [(name, before) for name, before, _, _ in seen] == [
        ("vm.builtin.copy", True), ("vm.builtin.copy", False), ("vm.builtin.copy", True),
        ("vm.builtin.copy", False), ("test.vm.le", True), ("test.vm.le", False)]
    assert seen[5][2] == 0  # the return value of 1 <= 0


def test_an_instrument_set_after_the_lookup_sees_the_calls():
    vm = _vm("add_two")
    main = vm["main"]
    vm.save_function("main", "saved", 2, 3)
    saved = vm["saved"]
    seen = []
    vm.set_instrument(lambda func, name, before, ret, *args: seen.append(name))
    assert main(1, 2) == 3 and seen
    seen.clear()
    assert saved() == 5 and seen


def test_skip_run_leaves_destination_unchanged():
    vm = _vm("add_two")
    vm.set_instrument(lambda func, name, before, ret, *args: VMInstrumentReturnKind.SKIP_RUN)
    assert vm["main"](1, 2) is None
    vm.set_instrument(None)
    assert vm["main"](1, 2) == 3


def test_instrument_around_bytecode_calls():
    vm = _vm("recursion")
    names = []
    vm.set_instrument(lambda func, name, before, ret, *args: names.append(name) if before else None)
    assert vm["fact"](3) == 6
    assert names.count("fact") == 2 and names.count("test.vm.mul") == 2


def test_time_evaluator_and_profile():
    vm = _vm("while_sum")
    result = vm.time_evaluator("sum", "cpu", number=3, repeat=4)(50)
    assert len(result.results) == 4 and all(t > 0 for t in result.results)
    assert result.min <= result.median <= result.max and result.std >= 0
    assert abs(result.mean - sum(result.results) / 4) < 1e-12
    assert "mean (ms)" in str(result)
    slow = vm.time_evaluator("sum", "cpu", number=1, repeat=1, min_repeat_ms=5)(50)
    assert slow.mean > 0
    report = vm.profile("sum", 10)
    rows = {row.name: row for row in report.rows}
    assert rows["test.vm.add"].calls == 20 and rows["test.vm.le"].calls == 11
    assert "test.vm.add" in str(report) and report.total > 0
    assert vm["sum"](10) == 55  # the profile's instrument is gone


def test_call_stack_overflow_is_an_error(monkeypatch):
    import relax.vm.machine.virtual_machine as machine
    monkeypatch.setattr(machine, "MAX_FRAMES", 100)
    with pytest.raises(VMError, match="call stack overflow"):
        _vm("recursion")["fact"](500)


def test_runaway_recursion_stops_soon_with_a_short_backtrace():
    # At 200,000 frames it took minutes; compiled mode stops at Python's limit (issue 16).
    with pytest.raises(VMError, match=r"^call stack overflow: more than 10000 nested calls$") as info:
        _vm("recursion")["fact"](10**9)
    error = info.value
    assert len(error.backtrace) == 10001
    lines = error.format_backtrace().splitlines()
    assert len(lines) == 21 and lines[10] == "  ... 9981 frames left out ..."
    assert lines[0].startswith("  [0] fact+") and lines[-1].startswith("  [10000] fact+")


def test_vm_takes_a_path_and_devices(tmp_path):
    path = tmp_path / "a.vmo"
    PROGRAMS["add_two"]().export(str(path))
    vm = VirtualMachine(str(path), device=["cpu:0"], memory="naive")
    assert vm["main"](1, 2) == 3 and len(vm.devices) == 1
    with pytest.raises(UserError, match="unknown memory allocator 'bogus'"):
        VirtualMachine(str(path), memory="bogus")
    with pytest.raises(UserError, match="unknown device"):
        VirtualMachine(str(path), device="tpu")


def test_importing_the_vm_does_not_import_the_compiler():
    import subprocess
    code = ("import sys, relax.vm, relax.runtime; "
            "bad = [m for m in sys.modules if m.split('.')[:2] in "
            "(['relax','ir'], ['relax','script'], ['relax','transform'], ['relax','op'], ['relax','tir'])]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
