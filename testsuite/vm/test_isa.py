"""The instruction set table: argument words, special registers, instruction words."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relax.vm.bytecode.isa import (
    OPCODES, VALUE_MAX, VALUE_MIN, VM_REGISTER, VOID_REGISTER, ArgKind, DecodeError, Opcode, call,
    decode_arg, decode_instruction, encode_arg, goto, if_, register_name, ret,
)


@settings(max_examples=200)
@given(st.sampled_from(list(ArgKind)), st.integers(VALUE_MIN, VALUE_MAX))
def test_argument_words_round_trip(kind, value):
    word = encode_arg(kind, value)
    assert -(1 << 63) <= word < (1 << 63)
    assert decode_arg(word) == (kind, value)


def test_argument_word_layout_matches_tvm():
    # kind in bits 63..56, value in bits 55..0 (two's complement, sign-extended)
    assert encode_arg(ArgKind.REGISTER, 5) == 5
    assert encode_arg(ArgKind.IMMEDIATE, 1) == (1 << 56) | 1
    assert encode_arg(ArgKind.CONST_INDEX, 3) == (2 << 56) | 3
    assert encode_arg(ArgKind.FUNC_INDEX, 0) == 3 << 56
    assert encode_arg(ArgKind.IMMEDIATE, -1) & ((1 << 64) - 1) == (1 << 56) | ((1 << 56) - 1)


def test_values_outside_56_bits_are_refused():
    with pytest.raises(ValueError):
        encode_arg(ArgKind.IMMEDIATE, VALUE_MAX + 1)
    with pytest.raises(ValueError):
        encode_arg(ArgKind.IMMEDIATE, VALUE_MIN - 1)


def test_special_registers_are_tvms():
    assert VOID_REGISTER == 1 << 54
    assert VM_REGISTER == (1 << 54) + 1
    assert register_name(VOID_REGISTER) == "%void"
    assert register_name(VM_REGISTER) == "%vm"
    assert register_name(7) == "%7"


def test_opcode_numbers_are_tvms():
    assert [int(op) for op in (Opcode.CALL, Opcode.RET, Opcode.GOTO, Opcode.IF)] == [1, 2, 3, 4]
    assert set(OPCODES) == {1, 2, 3, 4}


@pytest.mark.parametrize("instr", [
    call(3, [encode_arg(ArgKind.REGISTER, 0), encode_arg(ArgKind.IMMEDIATE, -2)], dst=4),
    call(0, [], dst=VOID_REGISTER), ret(2), goto(-3), if_(1, 5),
])
def test_instruction_words_round_trip(instr):
    words = instr.words()
    decoded, length = decode_instruction([99] + words, 1)
    assert decoded == instr
    assert length == len(words)


def test_call_layout_is_op_dst_func_count_args():
    assert call(7, [11, 12], dst=2).words() == [1, 2, 7, 2, 11, 12]
    assert if_(3, 14).words() == [4, 3, 14]


@pytest.mark.parametrize("words,message", [
    ([9], "unknown opcode 9"),
    ([2], "past the end"),
    ([1, 0, 0], "past the end"),
    ([1, 0, 0, 5, 1], "bad argument count"),
    ([1, 0, 0, -1], "bad argument count"),
])
def test_bad_words_do_not_decode(words, message):
    with pytest.raises(DecodeError, match=message):
        decode_instruction(words, 0)
