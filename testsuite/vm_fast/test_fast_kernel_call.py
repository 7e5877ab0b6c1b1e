"""The lean kernel call path (runtime/kernels/fast_call.py) gives the checked path's results and errors."""

import numpy as np
import pytest

from relax.build import build
from relax.runtime.kernels import KernelCallError
from relax.script import parse

ADD = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32"), y: R.Tensor((4,), dtype="float32")):
        with R.dataflow():
            lv = R.add(x, y)
            R.output(lv)
        return lv
"""


@pytest.fixture(scope="module")
def add_kernel():
    exe = build(parse(ADD), "llvm", 0)
    (library,) = exe.imports
    (name,) = library.list_functions()
    return library.get_function(name)


def test_static_kernel_has_a_fast_call_with_the_same_result(add_kernel):
    fast = add_kernel.fast_call
    assert fast is not None and "fast_call" in fast.__name__
    a, b, out = np.arange(4, dtype=np.float32), np.full(4, 2, np.float32), np.zeros(4, np.float32)
    fast(a, b, out)
    np.testing.assert_array_equal(out, a + b)
    fast(out, b, a)  # arguments change every call; nothing is cached but the layout
    np.testing.assert_array_equal(a, out + b)


@pytest.mark.parametrize("bad, message", [
    (np.zeros(4, np.float64), "expects dtype float32"),
    (np.zeros(5, np.float32), "dimension 0 must be 4"),
    (np.zeros((2, 2), np.float32), "expects 1 dimensions"),
    (np.zeros(8, np.float32)[::2], "C-contiguous"),
    ([0.0] * 4, "expects a float32 tensor"),
])
def test_bad_arguments_get_the_checked_message(add_kernel, bad, message):
    with pytest.raises(KernelCallError, match=message):
        add_kernel.fast_call(bad, np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_misaligned_and_overlapping_buffers_are_refused(add_kernel):
    raw = np.zeros(17, np.uint8)[1:].view(np.float32)
    assert raw.__array_interface__["data"][0] % 4
    with pytest.raises(KernelCallError, match="aligned"):
        add_kernel.fast_call(raw, np.zeros(4, np.float32), np.zeros(4, np.float32))
    a = np.zeros(4, np.float32)
    if add_kernel.info.noalias:
        with pytest.raises(KernelCallError, match="overlaps"):
            add_kernel.fast_call(a, np.zeros(4, np.float32), a)


def test_the_vm_calls_kernels_through_the_fast_path():
    from relax.vm import VirtualMachine

    vm = VirtualMachine(build(parse(ADD), "llvm", 0), "cpu")
    assert any(getattr(f, "kernel", None) is not None for f in vm.func_pool)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(vm["main"](x, x), x + x)


def test_the_native_entry_refuses_any_object_and_falls_back(add_kernel):
    from relax.runtime.kernels import fast_native

    fast = add_kernel.fast_call
    if fast_native.LAYOUT_OK:
        assert "entry(" in fast.source
    out = np.zeros(4, np.float32)
    for bad in (3, None, "abcd", (1.0, 2.0, 3.0, 4.0), object()):
        with pytest.raises(KernelCallError):
            fast(bad, out, np.zeros(4, np.float32))

    class Sub(np.ndarray):
        pass

    # A subclass is not numpy.ndarray itself: the checked path takes it (and accepts it).
    x = np.arange(4, dtype=np.float32).view(Sub)
    fast(x, x, out)
    np.testing.assert_array_equal(out, np.arange(4, dtype=np.float32) * 2)
