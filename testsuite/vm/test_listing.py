"""Listings: as_text in TVM's layout, stats, as_python, and assembling a listing back."""

import pathlib

import numpy as np
import pytest

from relax.diagnostics import DiagnosticError
from relax.vm import ExecBuilder
from relax.vm.codegen.assembler import assemble
from relax.vm.bytecode.binary import FormatError
from vm_programs import PROGRAMS


def test_as_text_layout_is_tvms():
    exe = PROGRAMS["while_sum"]()
    assert exe.as_text().split(".functions\n")[0] == (
        "@sum:\n"
        "  call  vm.builtin.copy  in: i1           dst: %1\n"
        "  call  vm.builtin.copy  in: i0           dst: %2\n"
        "  call  test.vm.le       in: %1, %0       dst: %3\n"
        "  If    %3, 4\n"
        "  call  test.vm.add      in: %2, %1       dst: %2\n"
        "  call  test.vm.add      in: %1, i1       dst: %1\n"
        "  goto  -4\n"
        "  ret   %2\n"
        "\n"
        "@vm.builtin.copy packed_func;\n"
        "\n"
        "@test.vm.le packed_func;\n"
        "\n"
        "@test.vm.add packed_func;\n"
        "\n"
    )


INPUTS = pathlib.Path(__file__).parent / "Inputs"


def test_listing_and_stats_match_tvm_0_27_output():
    """Inputs/tvm_add_multiply.* are what TVM 0.27 printed for the same bytecode."""
    exe = PROGRAMS["tvm_add_multiply"]()
    tvm_text = (INPUTS / "tvm_add_multiply.as_text").read_text()[:-1]  # print() added a newline
    assert exe.as_text().split(".functions\n")[0] == tvm_text
    assert exe.stats() == (INPUTS / "tvm_add_multiply.stats").read_text()


def test_as_text_special_registers_function_args_and_sections():
    text = PROGRAMS["closures"]().as_text()
    assert "  call  vm.builtin.make_closure in: f[adder], %1 dst: %2\n" in text
    assert "  call  vm.builtin.invoke_closure in: %vm, %2, %0  dst: %3\n" in text
    assert "  @adder num_inputs=2 registers=3 params=[\"x\", \"y\"]\n" in text
    text = PROGRAMS["constants"]().as_text()
    assert "@kernel num_inputs=2 vm_tir_func;\n" in text
    assert ".memory_scopes\n  c[0] \"global\"\n" in text
    assert "  c[2] = tensor bool [1, 2] = [[true, false]]\n" in text
    assert "  c[7] = shape [2, 3]\n" in text
    assert "  c[15] = tuple (tensor int32 [2] = [1, 1], tuple (shape [1], tuple ()))\n" in text
    assert "  c[5] = tensor float64 [20, 20] base64 " in text


def test_source_locations_section():
    exe = PROGRAMS["shape_heap"]()
    assert exe.as_text().endswith('.source_locations\n  main+0001 "model.relax:2:14"\n  main+0002 "model.relax:2:14"\n')
    assert '    ib.set_source_location("model.relax:2:14")\n' in exe.as_python()
    assert "    ib.set_source_location(None)\n" in exe.as_python()
    text = exe.as_text().replace("main+0002", "main+0099")
    with pytest.raises(DiagnosticError, match="'main\\+0099' is not an instruction of this listing"):
        assemble(text)


def test_as_text_of_one_function():
    text = PROGRAMS["recursion"]().as_text(func="fib")
    assert text.startswith("@fib:\n") and "@fact" not in text and ".constants" not in text


def test_stats_is_tvms():
    assert PROGRAMS["shape_heap"]().stats() == (
        "Relax VM executable statistics:\n"
        '  Constant pool (# 3): [float32, "ErrorContext(fn=main, loc=param[0], param=x, '
        'annotation=R.Tensor((n, 4), dtype="float32"))", "global"]\n'
        "  Globals (#8): [main, vm.builtin.alloc_shape_heap, vm.builtin.check_tensor_info, "
        "vm.builtin.match_shape, vm.builtin.make_shape, vm.builtin.alloc_storage, vm.builtin.alloc_tensor, "
        "test.vm.add_dps]\n"
    )
    stats = PROGRAMS["constants"]().stats().splitlines()
    assert stats[0] == "Relax VM executable statistics:"
    assert stats[1].startswith("  Constant pool (# 16): [[2, 3], [3], [1, 2], [8], scalar, [20, 20], [0, 3], "
                               "shapetuple[2, 3], shapetuple[], \"hello")
    assert stats[-1] == "  Globals (#3): [get, vm.builtin.make_tuple, kernel]"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_listing_assembles_back_byte_identical(name):
    exe = PROGRAMS[name]()
    assert assemble(exe.as_text()).save_to_bytes() == exe.save_to_bytes()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_as_python_rebuilds_the_same_bytes(name):
    exe = PROGRAMS[name]()
    namespace = {}
    exec(compile(exe.as_python(), f"<{name}>", "exec"), namespace)  # noqa: S102 - our own generated test code
    assert namespace["exe"].save_to_bytes() == exe.save_to_bytes()


def test_as_python_reads_like_tvms():
    text = PROGRAMS["closures"]().as_python()
    assert 'with ib.function("main", num_inputs=2, param_names=[\'a\', \'b\'], register_file_size=4):\n' in text
    assert '    ib.emit_call("vm.builtin.invoke_closure", args=[ib.r(vm), ib.r(2), ib.r(0)], dst=ib.r(3))\n' in text
    assert "    ib.emit_ret(ib.r(3))\n" in text


def _listing_error(text):
    with pytest.raises(DiagnosticError) as info:
        assemble(text, "bad.vmasm")
    (diagnostic,) = info.value.diagnostics
    return diagnostic.span.line, diagnostic.span.column, diagnostic.message


def test_assembler_errors_point_at_line_and_column():
    assert _listing_error("@main:\n  jump  3\n") == (
        2, 3, "unknown instruction 'jump' (expected call, ret, goto or If)")
    assert _listing_error("@main:\n  call  nowhere in: %0 dst: %1\n")[2] == (
        "call to 'nowhere', which is not a function of this listing")
    line, column, message = _listing_error("@f packed_func;\n\n@main:\n  call  f in: %0, x7 dst: %1\n")
    assert (line, column) == (4, 19) and message.startswith("bad argument 'x7'")
    assert _listing_error("  ret   %0\n")[2] == "instruction outside a bytecode function"
    assert "has no line in the .functions section" in _listing_error("@main:\n  ret   %0\n")[2]
    text = "@main:\n  ret   %0\n\n.functions\n  @main num_inputs=1 registers=1 params=[]\n.constants\n  c[0] = int x\n"
    assert _listing_error(text)[:2] == (7, 10)
    text = "@main:\n  ret   %0\n\n.functions\n  @main num_inputs=1 registers=1 params=[]\n.constants\n  c[1] = null\n"
    assert "expected constant c[0] here" in _listing_error(text)[2]


def test_the_assembler_reads_the_opcode_tables_layouts():
    # Usage messages and the parse come from isa.OPCODES' mnemonic and layout.
    assert _listing_error("@f packed_func;\n\n@main:\n  call  f %0 %1\n")[2] == (
        "expected 'call NAME in: ARGS dst: REGISTER'")
    assert _listing_error("@main:\n  If    %0 3\n")[2] == "expected 'If REGISTER, OFFSET'"
    assert _listing_error("@main:\n  goto  x\n")[2] == "expected an integer, not 'x'"
    assert _listing_error("@main:\n  ret   %void\n")[2] == "%void is not allowed here"


def test_assembler_reports_every_bad_instruction():
    with pytest.raises(DiagnosticError) as info:
        assemble("@main:\n  jump  3\n  ret   %x\n  goto  1\n", "bad.vmasm")
    assert [d.span.line for d in info.value.diagnostics] == [2, 3]


def test_assembled_listing_is_verified():
    text = "@main:\n  ret   %5\n\n.functions\n  @main num_inputs=1 registers=2 params=[]\n"
    with pytest.raises(FormatError, match="register %5 is outside the register file"):
        assemble(text)


_LISTING = ("@f packed_func;\n\n@main:\n  call  f in: %0, i1, c[0] dst: %1\n  ret   %1\n\n.functions\n"
            "  @main num_inputs=1 registers=2 params=[\"x\"]\n.constants\n  c[0] = int 5\n")
_HUGE = "9" * 5000


@pytest.mark.parametrize("old, new, where, message", [
    # Python refuses int() of more than 4300 digits: an internal error before (issue 16).
    ("c[0] dst", f"c[{_HUGE}] dst", (4, 25), "99999999999999999999... (5000 digits) does not fit in 64 bits"),
    ("i1,", f"i{_HUGE},", (4, 20), "99999999999999999999... (5000 digits) does not fit in 64 bits"),
    ("%1\n  ret", f"%{_HUGE}\n  ret", (4, 34), "99999999999999999999... (5000 digits) does not fit in 64 bits"),
    ("registers=2", f"registers={_HUGE}", (8, 32), "99999999999999999999... (5000 digits) does not fit in 64 bits"),
    ("  c[0] = int", f"  c[{_HUGE}] = int", (10, 5), "99999999999999999999... (5000 digits) does not fit in 64 bits"),
    ("int 5", f"int {_HUGE}", (10, 10), "bad int constant: 99999999999999999999... (5000 characters) does not fit in "
                                        "64 bits"),
    ("int 5", "int 9223372036854775808", (10, 10), "bad int constant: 9223372036854775808 does not fit in 64 bits"),
    ("int 5", f"shape [2, {_HUGE}]", (10, 10), "bad shape constant: 99999999999999999999... (5000 characters)"),
    ("int 5", "tensor int8 [2] = [1, 300]", (10, 10), "bad tensor constant: 300 does not fit in int8"),
    ("int 5", f"tensor int64 [] = {_HUGE}", (10, 10), "bad tensor constant: 99999999999999999999... (5000"),
    ("int 5", f"tensor float32 [1] = {'[' * 5000}1{']' * 5000}", (10, 10), "values nest deeper than 64 brackets"),
    ("int 5", f"dtype float{_HUGE}", None, "unknown dtype 'float999999999"),
    ("int 5", "dtype code=0 bits=256 lanes=1", None, "bad dtype constant: 256 does not fit in a dtype's bits (8 bits)"),
    ("[\"x\"]", "[" * 50000 + "]" * 50000, (8, 41), "params must be a list of quoted names"),
])
def test_listing_integers_are_range_checked_where_they_are_written(old, new, where, message):
    line, column, found = _listing_error(_LISTING.replace(old, new, 1))
    assert message in found and len(found) < 200
    assert where is None or (line, column) == where


def test_constant_text_round_trips_awkward_values():
    ib = ExecBuilder()
    values = [np.array([1e-45, 3.4028235e38, -0.0], dtype=np.float32), np.array([65504, 6e-8], dtype=np.float16),
              np.array([2**63 - 1, -2**63], dtype=np.int64), np.array([255], dtype=np.uint8), float("-inf"),
              -0.0, "\u00e9\t", np.frombuffer(bytes.fromhex("01807ff8"), dtype=np.float32)]
    with ib.function("main", num_inputs=0):
        ib.emit_call("f", args=[ib.add_constant(v) for v in values], dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    exe = ib.get()
    assert assemble(exe.as_text()).save_to_bytes() == exe.save_to_bytes()


# ---- property: any constant pool survives listing and as_python exactly ------------------------

import struct  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from relax.runtime import DataType, ShapeTuple  # noqa: E402

_DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "bool"]
_INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
_leaves = st.one_of(
    st.none(), st.booleans(), _INT64, st.text(max_size=12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(0, (1 << 64) - 1).map(lambda bits: struct.unpack("<d", bits.to_bytes(8, "little"))[0]),
    st.builds(DataType, st.integers(0, 255), st.integers(0, 255), st.integers(0, 65535)),
    st.lists(_INT64, max_size=4).map(ShapeTuple),
    st.sampled_from(_DTYPES).flatmap(
        lambda dtype: hnp.arrays(np.dtype(dtype), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))),
    st.sampled_from(["float16", "float32"]).flatmap(
        lambda dtype: hnp.arrays(np.dtype(dtype), st.just((300,)))),  # more than the printed limit
)
_constants = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_constants, min_size=1, max_size=4))
def test_any_constant_pool_round_trips_through_listing_and_python(values):
    ib = ExecBuilder()
    words = [ib.add_constant(value) for value in values]
    with ib.function("main", num_inputs=0):
        ib.emit_call("f", args=words, dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    exe = ib.get()
    data = exe.save_to_bytes()
    assert assemble(exe.as_text()).save_to_bytes() == data
    namespace = {}
    exec(compile(exe.as_python(), "<generated>", "exec"), namespace)  # noqa: S102 - generated by the test
    assert namespace["exe"].save_to_bytes() == data
