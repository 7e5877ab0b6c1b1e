"""The verifier refuses shape-protocol builtin calls whose integer arguments are not integers.

A fuzzed .vmo turned match_shape's dimension count from an immediate into a string
constant; relaxrun's compiled mode then added an int to a str (internal error, exit 70).
"""

import pytest

from relax.vm import ExecBuilder, VerificationError


def _main(emit):
    ib = ExecBuilder()
    with ib.function("main", num_inputs=2):
        emit(ib)
        ib.emit_ret(ib.r(0))
    return ib.get()


def _match_shape(size, *rest):
    return lambda ib: ib.emit_call("vm.builtin.match_shape", args=[ib.r(0), ib.r(1), size, *rest])


def test_match_shape_with_integer_codes_is_accepted():
    _main(lambda ib: ib.emit_call("vm.builtin.match_shape",
                                  args=[ib.r(0), ib.r(1), ib.imm(2), ib.imm(0), ib.imm(4), ib.imm(0), ib.imm(5),
                                        ib.convert_constant("ErrorContext(...)")]))


def test_match_shape_count_from_a_string_constant_is_refused():
    with pytest.raises(VerificationError, match=r"instruction 0: vm.builtin.match_shape: argument 2 must be an "
                                                r"integer, not c\[0\] \(a str constant\)"):
        _main(lambda ib: _match_shape(ib.convert_constant("text"), ib.imm(0), ib.imm(4))(ib))


@pytest.mark.parametrize("args, message", [
    (lambda ib: [ib.imm(3), ib.imm(0), ib.imm(4)], "for 3 dimensions has 5 arguments"),
    (lambda ib: [ib.imm(1), ib.r(0), ib.imm(4)], "argument 3 must be an integer, not a register"),
])
def test_match_shape_count_and_code_kinds(args, message):
    with pytest.raises(VerificationError, match=message):
        _main(lambda ib: ib.emit_call("vm.builtin.match_shape", args=[ib.r(0), ib.r(1), *args(ib)]))


def test_check_tensor_info_needs_an_integer_rank_and_a_dtype_constant():
    with pytest.raises(VerificationError, match="argument 2 must be a dtype constant, not c"):
        _main(lambda ib: ib.emit_call("vm.builtin.check_tensor_info",
                                      args=[ib.r(0), ib.imm(2), ib.convert_constant("x"), ib.convert_constant("e")]))


def test_shape_heap_size_is_bounded():
    with pytest.raises(VerificationError, match="bad shape heap size"):
        _main(lambda ib: ib.emit_call("vm.builtin.alloc_shape_heap", args=[ib.vm_state(), ib.imm(1 << 40)],
                                      dst=ib.r(1)))
