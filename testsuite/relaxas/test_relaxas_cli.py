"""relaxas in-process: exit codes, and no internal error whatever the input bytes."""

import pathlib
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relaxas.cli import main

# The test executables live with the VM tests.
sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "vm"))
from vm_programs import PROGRAMS  # noqa: E402

GOOD = PROGRAMS["shape_heap"]().save_to_bytes()


def test_dump_and_assemble_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.vmo"
    good.write_bytes(GOOD)
    assert main(["--dump", "stats", str(good)]) == 0
    assert capsys.readouterr().out.startswith("Relax VM executable statistics:")
    listing = tmp_path / "good.vmasm"
    assert main(["--dump", "text", str(good), "-o", str(listing)]) == 0
    assert main([str(listing)]) == 0  # writes good.vmo next to it: the same bytes
    assert good.read_bytes() == GOOD
    assert main(["--dump", "nope", str(good)]) == 2
    assert main(["--dump", "text", str(tmp_path / "missing.vmo")]) == 1
    assert "no such file or directory" in capsys.readouterr().err


def test_empty_and_magic_only_files_are_refused(tmp_path, capsys):
    # An empty file dumped as an empty executable; the 8 magic bytes of a .vmx (whose loader
    # registers on import) were read as a listing (issue 16).
    from relax.vm.artifact.vmx import MAGIC
    cases = {b"": "empty file", MAGIC: "not a valid linked artifact (.vmx): truncated header (8 bytes)",
             MAGIC[:5]: "file too short to be a relax executable (5 bytes)", GOOD[:8]: "truncated or corrupted .vmo"}
    for index, (data, message) in enumerate(cases.items()):
        path = tmp_path / f"{index}.vmo"
        path.write_bytes(data)
        for dump in ("text", "stats"):
            assert main(["--dump", dump, str(path)]) == 1
            captured = capsys.readouterr()
            assert captured.out == "" and f"relaxas: error: '{path}'" in captured.err and message in captured.err


def test_vms_input_is_dispatched(tmp_path, capsys):
    source = tmp_path / "m.vms"
    source.write_text("@I.ir_module\nclass Module:\n    @R.function\n"
                      "    def main(x: R.Tensor((2,), dtype=\"float32\")) -> R.Tensor((2,), dtype=\"float32\"):\n"
                      "        return x\n")
    assert main([str(source), "-o", str(tmp_path / "m.vmo")]) == 0
    assert main(["--dump", "text", str(tmp_path / "m.vmo")]) == 0
    assert capsys.readouterr().out.startswith("@main:\n  ret   %0\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(st.data())
def test_any_bytes_give_exit_0_or_1(tmp_path, capsys, data):
    blob = bytearray(GOOD[:data.draw(st.integers(0, len(GOOD)))])
    for _ in range(data.draw(st.integers(0, 3))):
        if blob:
            blob[data.draw(st.integers(0, len(blob) - 1))] ^= data.draw(st.integers(1, 255))
    if data.draw(st.booleans()):
        blob = bytearray(data.draw(st.binary(max_size=64)))
    path = tmp_path / "fuzz.vmo"
    path.write_bytes(bytes(blob))
    code = main(["--dump", "text", str(path)])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    assert "internal error" not in captured.err and "Traceback" not in captured.err
