"""relaxc's one-shot starts the kernels before the bytecode, and before it reads the text back
when they all come from memory (driver/artifact.py): the artifact is the one the staged
tools make, -v shows the stages in their new order, and errors come in the order of the
stages (a bytecode error before a held kernel error)."""

import pathlib

import pytest

from relax.diagnostics import UserError
from relax.driver import artifact, assemble
from relax.driver.compile import CompileOptions, compile_main

TINY = pathlib.Path(__file__).resolve().parent.parent / "relaxld" / "Inputs" / "tiny.relax"


def _options(output, verbose: int = 0) -> CompileOptions:
    return CompileOptions(source=str(TINY), emit="vmx", output=str(output), verbose=verbose,
                          allow_undefined=("user.*",))


def _one_shot(output, verbose: int = 0) -> bytes:
    assert compile_main(_options(output, verbose)) == 0
    return pathlib.Path(output).read_bytes()


def test_stages_in_order(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RELAX_CACHE", "0")
    first = _one_shot(tmp_path / "tiny.vmx", verbose=1)
    stages = [line.split(":")[1].strip() for line in capsys.readouterr().err.splitlines()
              if line.startswith("relaxc: ") and line.endswith(" s")]
    names = [stage.split(" for ")[0] for stage in stages]
    assert names[-5:] == ["kernels", "read .vms", "bytecode", "LLVM", "link"]
    assert _one_shot(tmp_path / "tiny.vmx") == first


def test_kernel_error_waits_for_the_bytecode(tmp_path, monkeypatch):
    from relax.codegen import backends

    def failing(*args, **kwargs):
        raise UserError("codegen: kernel failed")

    monkeypatch.setattr(backends, "start_kernels", failing)
    with pytest.raises(UserError, match="kernel failed"):
        _one_shot(tmp_path / "tiny.vmx")
    original = assemble.generate_bytecode

    def bytecode_fails(*args, **kwargs):
        original(*args, **kwargs)
        raise UserError("bytecode failed")

    monkeypatch.setattr(assemble, "generate_bytecode", bytecode_fails)
    with pytest.raises(UserError, match="bytecode failed"):
        _one_shot(tmp_path / "tiny.vmx")


# The kernels start before the bytecode, and before the read-back when all come from memory.
@pytest.mark.parametrize("failing", ["generate_bytecode", "read_vms"])
def test_a_failed_bytecode_or_read_back_cancels_the_kernels(failing, tmp_path, monkeypatch):
    cancelled = []
    original = artifact._PendingKernels.cancel

    def cancel(self):
        cancelled.append(True)
        original(self)

    def fails(*args, **kwargs):
        raise UserError(f"{failing} failed")

    monkeypatch.setenv("RELAX_CACHE", "0")
    monkeypatch.setattr(artifact._PendingKernels, "cancel", cancel)
    monkeypatch.setattr(assemble, failing, fails)
    with pytest.raises(UserError, match=f"{failing} failed"):
        _one_shot(tmp_path / "tiny.vmx")
    assert cancelled == [True]
    assert not (tmp_path / "tiny.vmx").exists()
