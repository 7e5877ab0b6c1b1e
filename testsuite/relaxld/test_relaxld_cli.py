"""relaxld in-process: exit codes, and no internal error whatever the input bytes."""

import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relax.build import build
from relax.driver.compile import parse_source
from relaxld.cli import main

TINY = pathlib.Path(__file__).resolve().parent / "Inputs" / "tiny.relax"


@pytest.fixture(scope="module")
def inputs():
    exe = build(parse_source(str(TINY)), "llvm")
    return exe.save_to_bytes(), exe.kernel_objects[0]


def test_exit_codes(tmp_path, inputs, capsys):
    (tmp_path / "t.vmo").write_bytes(inputs[0])
    (tmp_path / "t.ko").write_bytes(inputs[1])
    args = [str(tmp_path / "t.vmo"), str(tmp_path / "t.ko"), "-o", str(tmp_path / "t.vmx")]
    assert main(args + ["--allow-undefined", "user.*"]) == 0
    assert main(args) == 1
    assert "undefined reference to 'user.scale' in function 'scale'" in capsys.readouterr().err
    assert main([]) == 2
    assert main(["--bogus", str(tmp_path / "t.vmo")]) == 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_damaged_inputs_give_exit_0_or_1(tmp_path, inputs, capsys, data):
    which = data.draw(st.integers(0, 1))
    blob = bytearray(inputs[which][:data.draw(st.integers(0, len(inputs[which])))])
    for _ in range(data.draw(st.integers(0, 2))):
        if blob:
            blob[data.draw(st.integers(0, len(blob) - 1))] ^= data.draw(st.integers(1, 255))
    files = [tmp_path / "d.vmo", tmp_path / "d.ko"]
    for index, path in enumerate(files):
        path.write_bytes(bytes(blob) if index == which else inputs[index])
    code = main([str(files[0]), str(files[1]), "--allow-undefined", "user.*", "-o", str(tmp_path / "d.vmx")])
    assert code in (0, 1), capsys.readouterr().err
