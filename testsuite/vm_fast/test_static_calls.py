"""The interpreter's fused static allocation + call (vm/machine/static_calls.py) and the kernels'
METH_FASTCALL builtins (runtime/kernels/fast_native.py): same results, errors and profiles."""

import numpy as np
import pytest

from relax.build import build
from relax.runtime.kernels import KernelCallError, fast_native
from relax.script import parse
from relax.vm import VirtualMachine
from relax.vm.machine.decoder import ALLOC_CALL, ALLOC_CALL2, ALLOC_CALL3, ALLOC_CALLS

CHAIN = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        with R.dataflow():
            a = R.add(x, x)
            b = R.multiply(a, x)
            c = R.add(b, a)
            R.output(c)
        return c
"""


@pytest.fixture(scope="module")
def exe():
    return build(parse(CHAIN), "llvm", 0)


def fused(vm) -> int:
    return len(fused_ops(vm))


def fused_ops(vm) -> list[int]:
    kinds = set(ALLOC_CALLS.values())
    return [step[0] for function in vm._bytecode if function is not None for step in function.code
            if step[0] in kinds]


def expected(x):
    return (x + x) * x + (x + x)


def test_interpreter_fuses_each_static_allocation_with_its_call(exe):
    vm = VirtualMachine(exe, "cpu", exec_mode="interp")
    assert fused(vm) == 3
    x = np.arange(4, dtype=np.float32)
    first = vm["main"](x)
    second = vm["main"](x + 1)  # a held result is never reused
    np.testing.assert_array_equal(first, expected(x))
    np.testing.assert_array_equal(second, expected(x + 1))
    assert not np.shares_memory(first, second)
    held_bytes = vm.allocator(0).allocated_bytes
    del first, second
    for _ in range(3):  # nothing held: every allocation is handed out again
        np.testing.assert_array_equal(vm["main"](x), expected(x))
    assert vm.allocator(0).allocated_bytes == held_bytes


def test_compiled_mode_naive_memory_and_the_instrument_see_unfused_code(exe):
    assert fused(VirtualMachine(exe, "cpu", exec_mode="compiled")) == 0
    assert fused(VirtualMachine(exe, "cpu", exec_mode="interp", memory="naive")) == 0
    vm = VirtualMachine(exe, "cpu", exec_mode="interp")
    seen = []
    vm.set_instrument(lambda func, name, before, *rest: seen.append(name) if before else None)
    assert fused(vm) == 0
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(vm["main"](x), expected(x))
    assert seen.count("vm.builtin.alloc_storage") == 3 and seen.count("vm.builtin.alloc_tensor") == 3
    vm.set_instrument(None)
    assert fused(vm) == 3
    np.testing.assert_array_equal(vm["main"](x), expected(x))


def test_kernel_builtin_matches_the_checked_path(exe):
    (library,) = exe.imports
    kernel = library.get_function("add")
    builtin = kernel.fast_call.builtin
    if not fast_native.LAYOUT_OK or fast_native.C_API is None:
        assert builtin is None
        return
    a, b, out = np.arange(4, dtype=np.float32), np.full(4, 2, np.float32), np.zeros(4, np.float32)
    assert builtin(a, b, out) is None
    np.testing.assert_array_equal(out, a + b)
    for bad, message in ((np.zeros(5, np.float32), "dimension 0 must be 4"), ([0.0] * 4, "float32 tensor"),
                         (np.zeros(8, np.float32)[::2], "C-contiguous")):
        with pytest.raises(KernelCallError, match=message):
            builtin(bad, b, out)
    with pytest.raises(KernelCallError):
        builtin(a, b)  # the wrong arity goes to the checked path too
    with pytest.raises(TypeError):
        builtin(a, b, out=out)


def test_a_failing_fused_call_is_named_in_the_backtrace():
    from relax.runtime import register_func
    from relax.runtime.errors import VMError

    def fail(x, out):
        raise ValueError("refused")

    register_func("test.static_calls.fail", fail, override=True)
    text = CHAIN.replace("b = R.multiply(a, x)", 'b = R.call_dps_packed("test.static_calls.fail", (a,), '
                         'out_sinfo=R.Tensor((4,), dtype="float32"))')
    vm = VirtualMachine(build(parse(text), "llvm", 0), "cpu", exec_mode="interp")
    main = vm._function("main")
    fused_at = [pc for pc, step in enumerate(main.code) if step[0] in ALLOC_CALLS.values()]
    assert [main.code[pc][0] for pc in fused_at] == [ALLOC_CALL3, ALLOC_CALL2, ALLOC_CALL3]
    with pytest.raises(VMError, match="refused") as info:
        vm["main"](np.arange(4, dtype=np.float32))
    assert info.value.backtrace[-1].pc == fused_at[1] + 2  # the call's own position, not the allocation's


UNARY_AND_WIDE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32"), w: R.Tensor((4, 4), dtype="float32"),
             b: R.Tensor((4,), dtype="float32"), g: R.Tensor((4,), dtype="float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            c = R.add(R.matmul(a, w), b)
            d = R.exp(c)
            e = R.nn.layer_norm(d, g, b, axes=[-1], epsilon=1e-5)
            R.output(e)
        return e
"""


def test_calls_of_two_three_and_more_arguments_fuse_by_their_count():
    exe = build(parse(UNARY_AND_WIDE), "llvm", 0)
    vm = VirtualMachine(exe, "cpu", exec_mode="interp")
    rng = np.random.default_rng(0)
    x, w, b, g = (rng.standard_normal(shape).astype(np.float32) for shape in ((4,), (4, 4), (4,), (4,)))
    d = np.exp(np.maximum(x, 0) @ w + b)
    reference = (d - d.mean()) / np.sqrt(d.var() + 1e-5) * g + b
    ops = fused_ops(vm)
    # relu, exp (x, out); add, matmul (x, y, out); layer_norm (x, gamma, beta, out)
    assert {ALLOC_CALL2, ALLOC_CALL3, ALLOC_CALL} <= set(ops)
    for _ in range(2):
        np.testing.assert_allclose(vm["main"](x, w, b, g), reference, rtol=1e-4, atol=1e-5)
    unfused = VirtualMachine(exe, "cpu", exec_mode="interp", memory="naive")
    np.testing.assert_array_equal(vm["main"](x, w, b, g), unfused["main"](x, w, b, g))
