"""The .vmo file: round trips of every test executable, and refusal of bad files."""

import dataclasses
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relax.vm
from relax.vm import Executable, FuncKind
from relax.vm.bytecode.binary import FormatError
from relax.vm.bytecode.isa import ArgKind, call, encode_arg, goto, ret
from relax.vm.bytecode.vmo import MAGIC, save_executable
from vm_programs import PROGRAMS

PROGRAM_BYTES = {name: build().save_to_bytes() for name, build in PROGRAMS.items()}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_save_load_round_trip(name, tmp_path):
    data = PROGRAM_BYTES[name]
    loaded = Executable.load_from_bytes(data)
    assert loaded.save_to_bytes() == data
    path = tmp_path / f"{name}.vmo"
    loaded.export(str(path))
    assert relax.vm.load(str(path)).save_to_bytes() == data


def test_constants_survive_exactly():
    exe = PROGRAMS["constants"]()
    loaded = Executable.load_from_bytes(exe.save_to_bytes())
    assert len(loaded.constants) == len(exe.constants)
    for before, after in zip(exe.constants, loaded.constants):
        if isinstance(before, np.ndarray):
            assert before.dtype == after.dtype and before.shape == after.shape
            assert before.tobytes() == after.tobytes()
            assert not after.flags.writeable
        elif isinstance(before, float) and np.isnan(before):
            assert np.isnan(after)
        elif isinstance(before, tuple):
            assert type(before) is type(after)
        else:
            assert before == after and type(before) is type(after)
    assert loaded.memory_scopes == {0: "global"}


def test_header_layout():
    data = PROGRAM_BYTES["add_two"]
    assert int.from_bytes(data[:8], "little") == MAGIC == 0xD225DE2F4214151E
    version_length = int.from_bytes(data[8:16], "little")
    assert data[16:16 + version_length].decode() == relax.vm.bytecode.vmo.VERSION


def test_saving_is_deterministic():
    assert PROGRAMS["constants"]().save_to_bytes() == PROGRAMS["constants"]().save_to_bytes()


@pytest.mark.parametrize("data,message", [
    (b"", "not a relax bytecode object"),
    (b"\x7fELF" + bytes(60), "not a relax bytecode object"),
    (MAGIC.to_bytes(8, "little") + (3).to_bytes(8, "little") + b"9.9", "version '9.9' is not supported"),
    (MAGIC.to_bytes(8, "little") + (1 << 40).to_bytes(8, "little"), "truncated or corrupted"),
])
def test_bad_headers(data, message):
    with pytest.raises(FormatError, match=message):
        Executable.load_from_bytes(data, "f.vmo")


def test_unknown_magic_through_load(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"PK\x03\x04" + bytes(20))
    with pytest.raises(FormatError, match="unknown magic number 0x"):
        relax.vm.load(str(path))
    with pytest.raises(relax.diagnostics.UserError, match="no such file"):
        relax.vm.load(str(tmp_path / "missing.vmo"))


def test_truncated_file_says_so():
    data = PROGRAM_BYTES["recursion"]
    with pytest.raises(FormatError, match="truncated"):
        Executable.load_from_bytes(data[:len(data) // 2])


def test_flipped_byte_fails_checksum():
    data = bytearray(PROGRAM_BYTES["recursion"])
    data[len(data) // 2] ^= 0x10
    with pytest.raises(FormatError, match="checksum mismatch"):
        Executable.load_from_bytes(bytes(data))


def _with_fixed_checksum(body: bytes) -> bytes:
    return body + zlib.crc32(body).to_bytes(4, "little")


def _bad(exe: Executable) -> bytes:
    return save_executable(exe, check=False)


def _base():
    return PROGRAMS["recursion"]()


@pytest.mark.parametrize("mutate,message", [
    (lambda e: e.instr_data.__setitem__(e.instr_offset[1], 9), "unknown opcode 9"),
    (lambda e: e.instr_data.__setitem__(e.instr_offset[0] + 1, 99), "register %99 is outside the register file"),
    (lambda e: e.instr_data.__setitem__(e.instr_offset[0] + 2, 50), "function index 50, which does not exist"),
    (lambda e: e.instr_data.__setitem__(e.instr_offset[1] + 2, 100), "lands outside the function"),
    (lambda e: e.instr_data.__setitem__(e.instr_offset[0] + 4, encode_arg(ArgKind.CONST_INDEX, 3)),
     r"constant c\[3\] does not exist"),
    (lambda e: e.instr_data.__setitem__(e.instr_offset[0] + 4, 7 << 56), "unknown kind 7"),
    (lambda e: e.instr_offset.__setitem__(1, 5), "instruction 1 is at word 5"),
    (lambda e: e.func_table.__setitem__(0, dataclasses.replace(e.func_table[0], end_instr=99)),
     "are not the next ones"),
    (lambda e: e.func_table.__setitem__(0, dataclasses.replace(e.func_table[0], register_file_size=0)),
     "cannot hold 1 arguments"),
    (lambda e: e.func_table.__setitem__(1, dataclasses.replace(e.func_table[0])), "defined twice"),
    # A few bytes must not declare a huge register file or argument list (issue 16).
    (lambda e: e.func_table.__setitem__(0, dataclasses.replace(e.func_table[0], register_file_size=1 << 20)),
     r"register file size 1048576 is more than .* \(limit 73: arguments \+ instructions \+ 64"),
    (lambda e: e.func_table.__setitem__(0, dataclasses.replace(e.func_table[0], num_args=65, param_names=(),
                                                               register_file_size=70)),
     "65 arguments without parameter names"),
    (lambda e: e.memory_scopes.__setitem__(4, "global"), r"constant c\[4\], which does not exist"),
    (lambda e: e.source_locations.__setitem__(99, "m.relax:1:1"), "instruction 99, which does not exist"),
    (lambda e: e.source_locations.__setitem__(0, "two\nlines"), "bad source location"),
])
def test_verifier_refuses_structurally_bad_files(mutate, message):
    exe = _base()
    mutate(exe)
    with pytest.raises(FormatError, match=message):
        Executable.load_from_bytes(_bad(exe), "bad.vmo")


def test_verifier_checks_argument_count_of_calls_to_bytecode():
    exe = _base()
    # fact calls itself (function 0) with one argument; make the callee take two.
    exe.func_table[0] = dataclasses.replace(exe.func_table[0], num_args=2, param_names=("n", "m"))
    with pytest.raises(FormatError, match="call to 'fact' with 1 arguments, it takes 2"):
        Executable.load_from_bytes(_bad(exe))


def test_verifier_refuses_function_falling_off_its_end():
    exe = Executable()
    exe.func_table.append(relax.vm.FuncInfo(FuncKind.VM_FUNC, "main", 0, 1, 0, 1, ()))
    exe.func_table.append(relax.vm.FuncInfo(FuncKind.PACKED_FUNC, "f"))
    exe.instr_offset = [0]
    exe.instr_data = call(1, [], dst=0).words()
    with pytest.raises(FormatError, match="does not end with ret or goto"):
        Executable.load_from_bytes(_bad(exe))


# ---- fuzzing: truncated and corrupted files always fail cleanly -----------------------------

_FILES = sorted(PROGRAM_BYTES.items())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_FILES), st.data())
def test_truncation_always_fails_cleanly(named, data):
    _, blob = named
    cut = data.draw(st.integers(0, len(blob) - 1))
    with pytest.raises(FormatError):
        Executable.load_from_bytes(blob[:cut])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_FILES), st.data())
def test_flipped_bytes_fail_cleanly_or_load_a_verified_executable(named, data):
    """With the checksum recomputed, the structural checks alone must catch what matters."""
    _, blob = named
    body = bytearray(blob[:-4])
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(body) - 1))
        body[position] ^= data.draw(st.integers(1, 255))
    for candidate in (bytes(body) + blob[-4:], _with_fixed_checksum(bytes(body))):
        try:
            loaded = Executable.load_from_bytes(candidate)
        except FormatError:
            continue
        # What loads is verified and canonical: it saves back to the same bytes.
        assert loaded.save_to_bytes() == candidate


def test_a_ret_to_a_stray_register_cannot_load():
    exe = Executable()
    exe.func_table.append(relax.vm.FuncInfo(FuncKind.VM_FUNC, "main", 0, 2, 0, 1, ()))
    exe.instr_offset = [0, 2]
    exe.instr_data = goto(1).words() + ret(1).words()
    with pytest.raises(FormatError, match="register %1 is outside"):
        Executable.load_from_bytes(_bad(exe))


def test_export_dispatches_on_suffix(tmp_path):
    from relax.vm.bytecode.executable import EXPORTERS
    exe = PROGRAMS["add_two"]()
    exe.export(str(tmp_path / "a.vmx"))  # the linker's exporter, imported on demand
    assert relax.vm.load(str(tmp_path / "a.vmx")).save_to_bytes() == exe.save_to_bytes()
    written = []
    linker_exporter = EXPORTERS[".vmx"]
    EXPORTERS[".vmx"] = lambda executable, path: written.append((executable, path))
    try:
        exe.export(str(tmp_path / "b.vmx"))
    finally:
        EXPORTERS[".vmx"] = linker_exporter
    assert written == [(exe, str(tmp_path / "b.vmx"))]


def test_empty_tensor_with_absurd_extent_is_refused():
    ib = relax.vm.ExecBuilder()
    with ib.function("main", num_inputs=0):
        ib.emit_call("f", args=[np.zeros((0, 3))], dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    data = ib.get().save_to_bytes()
    shape_words = (2).to_bytes(4, "little") + (0).to_bytes(8, "little") + (3).to_bytes(8, "little")
    patched = data[:-4].replace(shape_words, shape_words[:12] + (1 << 62).to_bytes(8, "little"))
    assert patched != data[:-4]
    with pytest.raises(FormatError, match=r"tensor constant of shape \(0, 4611686018427387904\)"):
        Executable.load_from_bytes(_with_fixed_checksum(patched))


def test_loaders_are_chosen_by_magic():
    from relax.vm.bytecode.loader import LOADERS
    exe = PROGRAMS["add_two"]()
    LOADERS[b"TESTVMX1"] = lambda data, source: exe
    try:
        assert relax.vm.load_bytes(b"TESTVMX1 and the rest", "x.vmx") is exe
    finally:
        del LOADERS[b"TESTVMX1"]
    with pytest.raises(FormatError, match="not a relax executable: unknown magic number 0x2052585600000000"):
        relax.vm.load_bytes(b"\0\0\0\0VXR and more", "x.vmx")


def test_tensor_constants_start_on_a_cache_line_and_stay_read_only():
    """Kernels stream weights with whole-vector loads; a constant 16 bytes past a line was slower."""
    builder = relax.vm.ExecBuilder()
    for offset in range(1, 5):  # views starting 4, 8, 12, 16 bytes into their buffer
        builder.add_constant(np.arange(40, dtype=np.float32)[offset:offset + 33].reshape(3, 11))
    builder.add_constant(np.array(True))
    builder.add_constant(np.zeros((0, 3), np.float64))
    exe = builder.get()
    loaded = Executable.load_from_bytes(exe.save_to_bytes())
    for constants in (exe.constants, loaded.constants):
        for array in constants:
            assert array.size == 0 or array.ctypes.data % 64 == 0  # nothing is read from an empty one
            assert not array.flags.writeable and array.flags.c_contiguous
    for before, after in zip(exe.constants, loaded.constants):
        np.testing.assert_array_equal(before, after)
