"""exec_mode="compiled" (vm/machine/compiled_mode.py) against the interpreter: every sample, control flow,
recursion, closures, loops written by hand, and errors that still name the function."""

import pathlib

import numpy as np
import pytest

from relax.build import build
from relax.diagnostics import UserError
from relax.driver.compile import parse_source
from relax.runtime import VMError, register_func
from relax.vm import ExecBuilder, VirtualMachine

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
NAMES = sorted(p.stem for p in SAMPLES.glob("*.relax"))


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
