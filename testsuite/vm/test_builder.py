"""ExecBuilder: the code it writes, and the malformed code it refuses at build time."""

import numpy as np
import pytest

from relax.runtime import ShapeTuple
from relax.vm import ExecBuilder, FuncKind, VerificationError
from relax.vm.bytecode.isa import ArgKind, decode_arg


def _simple(ib, name="main", num_inputs=1):
    with ib.function(name, num_inputs=num_inputs):
        ib.emit_ret(ib.r(0))


def test_function_table_in_first_use_order():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("packed.a", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_call("helper", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with ib.function("helper", num_inputs=1):
        ib.emit_ret(ib.r(0))
    exe = ib.get()
    assert [(f.name, f.kind) for f in exe.func_table] == [
        ("main", FuncKind.VM_FUNC), ("packed.a", FuncKind.PACKED_FUNC), ("helper", FuncKind.VM_FUNC)]
    main = exe.func_table[0]
    assert (main.start_instr, main.end_instr, main.num_args, main.register_file_size) == (0, 3, 1, 3)
    assert main.param_names == ("x",)
    assert (exe.func_table[2].start_instr, exe.func_table[2].end_instr) == (3, 4)


def test_bytecode_is_laid_out_in_table_order_whatever_the_definition_order():
    ib = ExecBuilder()
    ib.declare_function("b", kind="vm_func")
    _simple(ib, "a")
    _simple(ib, "b")
    exe = ib.get()
    assert [f.name for f in exe.func_table] == ["b", "a"]
    assert [(f.start_instr, f.end_instr) for f in exe.func_table] == [(0, 1), (1, 2)]


def test_constants_are_deduplicated_by_value_and_type():
    ib = ExecBuilder()
    a = ib.convert_constant(np.array([1.0], dtype=np.float32))
    b = ib.convert_constant(np.array([1.0], dtype=np.float32))
    c = ib.convert_constant(np.array([1.0], dtype=np.float64))
    d = ib.convert_constant(ShapeTuple([1]))
    e = ib.convert_constant((1,))
    f = ib.add_constant(np.array([1.0], dtype=np.float32))
    indexes = [decode_arg(w)[1] for w in (a, b, c, d, e, f)]
    assert indexes == [0, 0, 1, 2, 3, 4]
    assert all(decode_arg(w)[0] == ArgKind.CONST_INDEX for w in (a, f))


def test_tuple_arguments_become_shape_constants():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=0):
        ib.emit_call("f", args=[(2, 3), "text", 1.5], dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    exe = ib.get()
    assert exe.constants[0] == ShapeTuple([2, 3]) and isinstance(exe.constants[0], ShapeTuple)
    assert exe.constants[1:] == ["text", 1.5]


def test_register_file_size_can_be_larger_than_used():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, register_file_size=10):
        ib.emit_ret(ib.r(0))
    assert ib.get().func_table[0].register_file_size == 10


def _refused(build, message):
    ib = ExecBuilder()
    with pytest.raises(VerificationError, match=message):
        build(ib)
        ib.get()


def test_refuses_jump_outside_function():
    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_goto(5)
    _refused(build, "jump to 5 is outside the function")


def test_refuses_backward_jump_before_start():
    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_if(ib.r(0), 1)
            ib.emit_goto(-2)
    _refused(build, "outside the function")


def test_refuses_function_falling_off_its_end():
    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_call("f", args=[ib.r(0)])
    _refused(build, "does not end with emit_ret or emit_goto")


def test_refuses_empty_function():
    def build(ib):
        with ib.function("main", num_inputs=1):
            pass
    _refused(build, "has no instructions")


def test_refuses_instruction_outside_function():
    _refused(lambda ib: ib.emit_ret(ib.r(0)), "inside `with ib.function")


def test_refuses_unknown_constant_index():
    _refused(lambda ib: ib.c(0), r"constant c\[0\] does not exist")


def test_refuses_immediate_too_large():
    _refused(lambda ib: ib.imm(1 << 60), "does not fit in the 56 bits")


def test_refuses_bool_as_argument():
    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_call("f", args=[True])
    _refused(build, "a bool is not an argument word")


def test_refuses_non_register_destination():
    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_call("f", args=[], dst=ib.imm(3))
    _refused(build, "dst takes a register")


def test_refuses_vm_register_as_return_value():
    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_ret(ib.r("vm"))
    _refused(build, "special register %vm")


def test_refuses_function_defined_twice():
    def build(ib):
        _simple(ib)
        _simple(ib)
    _refused(build, "defined twice")


def test_refuses_bad_function_name():
    _refused(lambda ib: _simple(ib, "has space"), "bad function name")


def test_refuses_param_names_count_mismatch():
    def build(ib):
        with ib.function("main", num_inputs=2, param_names=["x"]):
            ib.emit_ret(ib.r(0))
    _refused(build, "1 parameter names for 2 inputs")


def test_refuses_wrong_argument_count_to_bytecode_function():
    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_call("helper", args=[ib.r(0), ib.r(0)], dst=ib.r(1))
            ib.emit_ret(ib.r(1))
        _simple(ib, "helper")
    _refused(build, "call to 'helper' with 2 arguments, it takes 1")


def test_refuses_declared_function_without_body():
    def build(ib):
        ib.declare_function("later", kind="vm_func")
    _refused(build, "declared but never given a body")


def test_refuses_redeclaring_a_bytecode_function_as_packed():
    def build(ib):
        _simple(ib)
        ib.declare_function("main", kind="packed_func")
    _refused(build, "already declared as vm_func")


def test_refuses_register_file_smaller_than_used():
    def build(ib):
        with ib.function("main", num_inputs=1, register_file_size=1):
            ib.emit_call("f", args=[], dst=ib.r(3))
            ib.emit_ret(ib.r(3))
    _refused(build, "uses 4 registers")


def test_refuses_unconvertible_argument():
    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_call("f", args=[object()])
    _refused(build, "cannot pass a object")


def test_refuses_unsupported_constant():
    from relax.diagnostics import UserError
    with pytest.raises(UserError, match="cannot be a VM constant"):
        ExecBuilder().convert_constant({"a": 1})


@pytest.mark.parametrize("kind", ["bytecode", 7])
def test_refuses_unknown_function_kind(kind):
    _refused(lambda ib: ib.declare_function("f", kind=kind), "unknown function kind")
