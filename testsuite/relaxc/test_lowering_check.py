"""relaxc's one-shot reads its lowered module back from memory (driver/artifact.py): what
goes wrong there is not at a line of the user's file (driver/lowering_check.py). After the
default pipeline it is the toolchain's fault, an internal error (exit 70) that says how to
see the module; after --passes the diagnostics stay, with a note saying where they point."""

from __future__ import annotations

import pathlib

import relax.script
from relaxc.cli import main

IDENTITY = """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        return x
"""


def _broken_printer(monkeypatch):
    """A printer that writes a use of an undefined name, as a printer bug would."""
    original = relax.script.script
    monkeypatch.setattr(relax.script, "script", lambda mod: original(mod).replace("return x", "return q"))


def test_unreadable_lowered_module_is_an_internal_error(tmp_path, monkeypatch, capsys):
    source = tmp_path / "identity.relax"
    source.write_text(IDENTITY)
    _broken_printer(monkeypatch)
    assert main([str(source), "-o", str(tmp_path / "identity.vmx")]) == 70
    err = capsys.readouterr().err
    assert err.startswith("relaxc: internal error: RuntimeError: the lowered module does not assemble"
                          " (identity.vms:")
    assert "undefined variable 'q'" in err and "`relaxc -S` writes it as identity.vms" in err
    assert not pathlib.Path(tmp_path / "identity.vmx").exists()


def test_after_passes_the_lowered_module_errors_are_the_users(tmp_path, monkeypatch, capsys):
    source = tmp_path / "identity.relax"
    source.write_text(IDENTITY)
    _broken_printer(monkeypatch)
    passes = "normalize,to-non-dataflow,call-tir-rewrite,vm-builtin-lower,vm-shape-lower"
    assert main([str(source), "--passes", passes, "-o", str(tmp_path / "identity.vmx")]) == 1
    err = capsys.readouterr().err
    assert "identity.vms:" in err and "error: undefined variable 'q'" in err
    assert "relaxc: note: identity.vms is the module after the passes run" in err
