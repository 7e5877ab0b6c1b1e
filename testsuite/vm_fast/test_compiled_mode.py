"""exec_mode="compiled" (vm/machine/compiled_mode.py) against the interpreter: every sample, control flow,
recursion, closures, loops written by hand, and errors that still name the function."""

import pathlib
import sys

import numpy as np
import pytest

from relax.build import build
from relax.diagnostics import UserError
from relax.driver.compile import parse_source
from relax.runtime import VMError, register_func
from relax.vm import ExecBuilder, VirtualMachine
from sample_names import ARTIFACT_SAMPLES

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
# Samples with inputs: py_func.relax, whose main is a Python function, runs just in time instead.
NAMES = ARTIFACT_SAMPLES


@pytest.fixture(autouse=True)
def sample_packed_functions():
    register_func("samples.scale_by_two", lambda x: x * np.float32(2), override=True)

    def add_one_dps(x, out):
        out[...] = x + np.float32(1)

    register_func("samples.add_one_dps", add_one_dps, override=True)


def flatten(value, out):
    if isinstance(value, tuple):
        for item in value:
            flatten(item, out)
    else:
        out.append(np.asarray(value))
    return out


@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("name", NAMES)
def test_compiled_mode_matches_the_interpreter_on_every_sample(name, opt_level):
    mod = parse_source(str(SAMPLES / f"{name}.relax"))
    inputs = np.load(SAMPLES / "data" / f"{name}.inputs.npz")
    exe = build(mod, "llvm", opt_level)
    args = [inputs[p.name_hint] for p in mod["main"].params]
    expected = flatten(VirtualMachine(exe, "cpu")["main"](*args), [])
    compiled = VirtualMachine(exe, "cpu", exec_mode="compiled")
    assert compiled._compiled is not None
    for _ in range(2):  # the second call runs on the storage the first one left
        outputs = flatten(compiled["main"](*args), [])
        assert len(outputs) == len(expected)
        for got, want in zip(outputs, expected):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def counting_loop():
    """A loop (backward Goto) that structured code cannot express: the block machine runs it."""
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["n"]):
        ib.emit_call("vm.builtin.copy", args=[ib.imm(0)], dst=ib.r(1))
        ib.emit_call("test.vm_fast.lt", args=[ib.r(1), ib.r(0)], dst=ib.r(2))
        ib.emit_if(ib.r(2), 3)
        ib.emit_call("test.vm_fast.add", args=[ib.r(1), ib.imm(1)], dst=ib.r(1))
        ib.emit_goto(-3)
        ib.emit_ret(ib.r(1))
    return ib.get()


def recursion():
    """fact(n) = n < 1 ? 1 : n * fact(n - 1), and a closure over `fact` called through invoke_closure."""
    ib = ExecBuilder()
    with ib.function("fact", num_inputs=1, param_names=["n"]):
        ib.emit_call("test.vm_fast.lt", args=[ib.r(0), ib.imm(1)], dst=ib.r(1))
        ib.emit_if(ib.r(1), 3)
        ib.emit_call("vm.builtin.copy", args=[ib.imm(1)], dst=ib.r(2))
        ib.emit_goto(4)
        ib.emit_call("test.vm_fast.add", args=[ib.r(0), ib.imm(-1)], dst=ib.r(3))
        ib.emit_call("fact", args=[ib.r(3)], dst=ib.r(4))
        ib.emit_call("test.vm_fast.mul", args=[ib.r(0), ib.r(4)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with ib.function("main", num_inputs=1, param_names=["n"]):
        ib.emit_call("vm.builtin.make_closure", args=[ib.f("fact")], dst=ib.r(1))
        ib.emit_call("vm.builtin.invoke_closure", args=[ib.r("vm"), ib.r(1), ib.r(0)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with ib.function("fails", num_inputs=1, param_names=["n"]):
        ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_call("fact", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    return ib.get()


@pytest.fixture
def arithmetic():
    register_func("test.vm_fast.lt", lambda a, b: a < b, override=True)
    register_func("test.vm_fast.add", lambda a, b: a + b, override=True)
    register_func("test.vm_fast.mul", lambda a, b: a * b, override=True)


def test_loops_recursion_and_closures_match(arithmetic):
    loop = counting_loop()
    for mode in ("interp", "compiled"):
        assert VirtualMachine(loop, "cpu", exec_mode=mode)["main"](7) == 7
        vm = VirtualMachine(recursion(), "cpu", exec_mode=mode)
        assert vm["fact"](10) == 3628800
        assert vm["main"](6) == 720
    assert "while True" in VirtualMachine(loop, "cpu", exec_mode="compiled")._compiled[0].source


def test_errors_name_the_function_and_instruction_as_the_interpreter_does(arithmetic):
    def failure(mode):
        vm = VirtualMachine(recursion(), "cpu", exec_mode=mode)
        with pytest.raises(VMError) as info:
            vm["fails"]("x")  # "x" < 1 raises TypeError inside fact
        return info.value

    interp, compiled = failure("interp"), failure("compiled")
    assert str(compiled) == str(interp)
    assert [(f.function, f.pc) for f in compiled.backtrace] == [(f.function, f.pc) for f in interp.backtrace]
    assert [f.function for f in compiled.backtrace] == ["fails", "fact"]
    assert compiled.format_backtrace() == interp.format_backtrace()


def test_runaway_recursion_is_the_same_error_in_both_modes(arithmetic):
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # relaxrun's; the compiler raises it
    try:
        messages = []
        for mode in ("interp", "compiled"):
            with pytest.raises(VMError) as info:
                VirtualMachine(recursion(), "cpu", exec_mode=mode)["fact"](10**9)
            messages.append(str(info.value))
    finally:
        sys.setrecursionlimit(limit)
    assert messages == ["call stack overflow: more than 10000 nested calls",
                        "call stack overflow: more than 1000 nested calls (Python's recursion limit)"]


def test_check_failures_keep_their_message(arithmetic):
    mod = parse_source(str(SAMPLES / "mlp.relax"))
    inputs = np.load(SAMPLES / "data" / "mlp.inputs.npz")
    args = [inputs[p.name_hint] for p in mod["main"].params]
    args[0] = np.zeros((1, 783), np.float32)
    exe = build(mod, "llvm", 2)
    messages = []
    for mode in ("interp", "compiled"):
        with pytest.raises(VMError) as info:
            VirtualMachine(exe, "cpu", exec_mode=mode)["main"](*args)
        messages.append((str(info.value), info.value.backtrace))
    assert messages[0] == messages[1]
    assert "main" in messages[1][1][0].function


def test_unknown_exec_mode_is_refused():
    with pytest.raises(UserError, match="exec_mode"):
        VirtualMachine(counting_loop(), "cpu", exec_mode="jit")


def _emit(ib, ops):
    for op in ops:
        if op[0] == "if":
            ib.emit_if(ib.r(0), op[1])
        elif op[0] == "goto":
            ib.emit_goto(op[1])
        else:
            ib.emit_call("vm.builtin.copy", args=[ib.r(op[1])], dst=ib.r(2))


def _nested_ifs(depth):
    """`if c: (if c: ... r2 = x ...) else: r2 = x`, nested `depth` deep, in the code generator's shape."""
    ops = [("copy", 1)]
    for _ in range(depth):
        ops = [("if", len(ops) + 2)] + ops + [("goto", 2), ("copy", 1)]
    return ops


def _program(ops):
    ib = ExecBuilder()
    with ib.function("main", num_inputs=2, param_names=["c", "x"]):
        _emit(ib, ops)
        ib.emit_ret(ib.r(2))
    return ib.get()


@pytest.mark.parametrize("ops,when_false", [
    (_nested_ifs(150), 7),                       # Python refuses 100 indentation levels
    ([("if", 2), ("copy", 1)] * 1600, None),     # 3200 basic blocks: too long an elif chain to compile
], ids=["nested", "many-blocks"])
def test_generated_code_nests_no_deeper_than_a_bound(ops, when_false):
    exe = _program(ops)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # relaxrun's (the compiler raises it; compile() scales its own limits by it)
    try:
        vms = [VirtualMachine(exe, "cpu", exec_mode=mode) for mode in ("interp", "compiled")]
        for cond, expected in ((True, 7), (False, when_false)):
            assert [vm["main"](cond, 7) for vm in vms] == [expected, expected]
    finally:
        sys.setrecursionlimit(limit)
    source = vms[1]._compiled[0].source
    assert max(len(line) - len(line.lstrip()) for line in source.splitlines()) <= 4 * 40


def test_shallow_code_stays_structured():
    source = VirtualMachine(_program(_nested_ifs(20)), "cpu", exec_mode="compiled")._compiled[0].source
    assert "while True" not in source
