"""Entry check sites (vm/machine/entry_checks.py) accept and refuse exactly what the builtins do."""

import numpy as np
import pytest

from relax.build import build
from relax.runtime import VMError
from relax.script import parse
from relax.vm import VirtualMachine

MODULE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        with R.dataflow():
            y = R.add(x, x)
            R.output(y)
        return y
"""


@pytest.fixture(scope="module")
def exe():
    return build(parse(MODULE), "llvm", 2)


def checks_installed(vm):
    return [step[1] for step in vm._bytecode[0].code if getattr(step[1], "__qualname__", "").startswith(
        ("tensor_info_check", "static_shape_check"))]


@pytest.mark.parametrize("bad, message", [
    (np.zeros((2, 3), np.float64), "dtype float32"),
    (np.zeros((3, 2), np.float32), r"shape\[0\] mismatch"),
    (np.zeros(6, np.float32), "ndim 2"),
    ((1, 2), "expected a Tensor"),
])
def test_check_sites_report_as_the_builtins(exe, bad, message):
    fast = VirtualMachine(exe, "cpu")
    assert len(checks_installed(fast)) == 2
    hooked = VirtualMachine(exe, "cpu")
    hooked.set_instrument(lambda *args: None)  # instrumented code keeps the builtins
    assert not checks_installed(hooked)
    errors = []
    for vm in (fast, hooked):
        with pytest.raises(VMError, match=message) as info:
            vm["main"](bad)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_a_big_endian_array_is_accepted_as_by_the_builtin(exe):
    x = np.arange(6, dtype=">f4").reshape(2, 3)
    with pytest.raises(VMError, match="kernel"):  # past the checks: the kernel wants native float32
        VirtualMachine(exe, "cpu")["main"](x)
