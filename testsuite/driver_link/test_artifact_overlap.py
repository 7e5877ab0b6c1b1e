"""relaxc's one-shot starts the kernels before the bytecode, which it generates from the module
in memory when the kernels all come from memory, and from the text read back otherwise
(driver/artifact.py): the artifact is the one the staged tools make, -v shows the stages in
their order, and errors come in the order of the stages (a bytecode error before a held
kernel error)."""

import pathlib

import pytest

from relax.diagnostics import UserError
from relax.driver import artifact, assemble
from relax.driver.compile import CompileOptions, compile_main
from relax.vm.codegen import codegen_vm

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
    assert names[-5:] == ["print .vms", "kernels", "bytecode", "LLVM", "link"]
    assert _one_shot(tmp_path / "tiny.vmx") == first


def _read_back_for_the_bytecode(monkeypatch):
    """The one-shot as when the printer could not say where the bindings print: the
    bytecode comes from the text read back (after the kernels, all from memory, start)."""
    from relax.script.printed_bindings import PrintedBindings

    original = PrintedBindings.unmark

    def incomplete(self, text):
        unmarked = original(self, text)
        self.complete = False
        return unmarked

    monkeypatch.setattr(PrintedBindings, "unmark", incomplete)


def test_the_bytecode_from_the_text_read_back_is_the_same(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RELAX_CACHE", "0")
    in_memory = _one_shot(tmp_path / "tiny.vmx")
    _read_back_for_the_bytecode(monkeypatch)
    read_back = _one_shot(tmp_path / "tiny.vmx", verbose=1)
    stages = [line.split(":")[1].strip() for line in capsys.readouterr().err.splitlines()
              if line.startswith("relaxc: ") and line.endswith(" s")]
    assert [stage.split(" for ")[0] for stage in stages][-5:] == ["kernels", "read .vms", "bytecode", "LLVM", "link"]
    assert read_back == in_memory


@pytest.mark.parametrize("read_back", [False, True], ids=["in-memory", "read-back"])
def test_kernel_error_waits_for_the_bytecode(read_back, tmp_path, monkeypatch):
    from relax.codegen import backends

    if read_back:
        _read_back_for_the_bytecode(monkeypatch)

    def failing(*args, **kwargs):
        raise UserError("codegen: kernel failed")

    monkeypatch.setattr(backends, "start_kernels", failing)
    with pytest.raises(UserError, match="kernel failed"):
        _one_shot(tmp_path / "tiny.vmx")
    original = codegen_vm.generate

    def bytecode_fails(*args, **kwargs):
        original(*args, **kwargs)
        raise UserError("bytecode failed")

    monkeypatch.setattr(codegen_vm, "generate", bytecode_fails)
    with pytest.raises(UserError, match="bytecode failed"):
        _one_shot(tmp_path / "tiny.vmx")


# The kernels start before the bytecode, before the read-back when all come from memory, and
# before the link reads the bytecode.
@pytest.mark.parametrize("failing", ["generate", "read_vms", "read_bytecode"])
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
    if failing == "read_vms":
        _read_back_for_the_bytecode(monkeypatch)
    from relax.vm.artifact import linker

    monkeypatch.setattr({"generate": codegen_vm, "read_vms": assemble, "read_bytecode": linker}[failing], failing, fails)
    with pytest.raises(UserError, match=f"{failing} failed"):
        _one_shot(tmp_path / "tiny.vmx")
    assert cancelled == [True]
    assert not (tmp_path / "tiny.vmx").exists()


def test_llvm_has_every_core_before_the_link_reads_the_bytecode(tmp_path, monkeypatch):
    """One core is held for relaxc's own Python while it generates kernels and bytecode;
    reading the bytecode for the link is short, and runs while LLVM has every core."""
    from relax.codegen import object_parts
    from relax.vm.artifact import linker

    events = []
    all_cores, read_bytecode = object_parts.PartCompiler.all_cores, linker.read_bytecode

    def releasing(self):
        events.append("all cores")
        all_cores(self)

    def reading(*args, **kwargs):
        events.append("read bytecode")
        return read_bytecode(*args, **kwargs)

    monkeypatch.setenv("RELAX_CACHE", "0")
    monkeypatch.setattr(object_parts.PartCompiler, "all_cores", releasing)
    monkeypatch.setattr(linker, "read_bytecode", reading)
    _one_shot(tmp_path / "tiny.vmx")
    assert events[:2] == ["all cores", "read bytecode"]
