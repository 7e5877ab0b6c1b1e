"""vm/machine/default_mode.py: the exec mode a VM picks when nobody names one."""

import math
import sys

from relax.vm import VirtualMachine
from relax.vm.bytecode.executable import Executable

from vm_programs import PROGRAMS, register_callbacks

register_callbacks()


def _vm(name, **kwargs):
    return VirtualMachine(Executable.load_from_bytes(PROGRAMS[name]().save_to_bytes()), **kwargs)


def test_a_program_without_recursion_runs_compiled():
    for name in ("add_two", "while_sum", "tuples", "shape_heap", "constants"):
        assert _vm(name).exec_mode == "compiled", name


def test_a_recursive_program_runs_in_the_interpreter_and_goes_past_pythons_limit():
    vm = _vm("recursion")
    assert vm.exec_mode == "interp"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # the compiler raised it on import; the runtime alone keeps 1000
    try:
        depth = 3000
        assert vm["fact"](depth) == math.factorial(depth)
    finally:
        sys.setrecursionlimit(limit)


def test_a_program_calling_closures_runs_in_the_interpreter():
    assert _vm("closures").exec_mode == "interp"
    assert _vm("closure_recursion").exec_mode == "interp"


def test_the_caller_decides_over_the_default():
    assert _vm("recursion", exec_mode="compiled").exec_mode == "compiled"
    assert _vm("add_two", exec_mode="interp").exec_mode == "interp"
