"""relaxrun --exec-mode interp|compiled: both give the sample's expected outputs."""

import pathlib

import pytest

import relax.driver.run as run
from relax.build import build
from relax.script import parse
from relaxrun.cli import main

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"


@pytest.mark.parametrize("mode", ["interp", "compiled"])
@pytest.mark.parametrize("name", ["mlp", "control_flow", "tuples"])
def test_exec_mode_runs_the_sample(name, mode, monkeypatch, capsys):
    exe = build(parse((SAMPLES / f"{name}.relax").read_text(), f"samples/{name}.relax"))
    monkeypatch.setattr(run, "load_artifact", lambda path, trust=(): exe)
    data = SAMPLES / "data"
    code = main([f"{name}.vmx", "--exec-mode", mode, "--input", f"@{data / f'{name}.inputs.npz'}",
                 "--expected-output", f"@{data / f'{name}.expected.npz'}", "--atol", "1e-4", "-v"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert f"exec mode {mode}" in err


def test_an_unknown_exec_mode_is_a_usage_error(capsys):
    assert main(["x.vmx", "--exec-mode", "jit"]) == 2
