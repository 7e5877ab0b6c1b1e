"""A .ko whose native object is damaged under a recomputed checksum: every tool refuses it
with exit 1 and a message (relaxrun and relax.load died by SIGSEGV in LLVM before
relax.runtime.kernels.elf_check)."""

import dataclasses
import pathlib
import subprocess
import sys

import pytest

import relax
from relax.build import build
from relax.diagnostics import UserError
from relax.driver.compile import parse_source
from relax.runtime.kernels import container
from relax.vm.artifact import vmx
from relax.vm.artifact.linker import LinkInput, link
from relaxas.cli import main as relaxas
from relaxld.cli import main as relaxld

TINY = pathlib.Path(__file__).resolve().parents[1] / "relaxld" / "Inputs" / "tiny.relax"
REFUSAL = "'{}' is not a valid kernel object: the native object of target 0"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """t.vmo, bad.ko (the first native object cut in half, the .ko's SHA-256 recomputed) and
    bad.vmx (a linked t.vmx whose embedded .ko is bad.ko, its hashes recomputed too)."""
    directory = tmp_path_factory.mktemp("elf_check_tools")
    exe = build(parse_source(str(TINY)), "llvm")
    vmo, good = exe.save_to_bytes(), exe.kernel_objects[0]
    kernel_object = container.read(good)
    native = kernel_object.objects[0]
    cut = {**kernel_object.objects, 0: native[:len(native) // 2]}
    bad = container.write(dataclasses.replace(kernel_object, objects=cut))
    linked = vmx.read(link(LinkInput("t.vmo", vmo), [LinkInput("bad.ko", good)], ["user.*"]).data)
    inputs = (linked.info.inputs[0], {**linked.info.inputs[1], "size": len(bad), "sha256": vmx.sha256_hex(bad)})
    artifact = vmx.Artifact(dataclasses.replace(linked.info, inputs=inputs), linked.bytecode, (bad,))
    for name, data in (("t.vmo", vmo), ("bad.ko", bad), ("bad.vmx", vmx.write(artifact))):
        (directory / name).write_bytes(data)
    return directory


def test_relaxld_refuses_it(files, capsys):
    code = relaxld([str(files / "t.vmo"), str(files / "bad.ko"), "--allow-undefined", "user.*",
                    "-o", str(files / "out.vmx")])
    assert code == 1
    assert REFUSAL.format(files / "bad.ko") in capsys.readouterr().err
    assert not (files / "out.vmx").exists()


@pytest.mark.parametrize("dump", ["text", "stats"])
def test_relaxas_dump_refuses_an_artifact_holding_it(files, capsys, dump):
    assert relaxas(["--dump", dump, str(files / "bad.vmx")]) == 1
    assert REFUSAL.format(f"{files / 'bad.vmx'}(bad.ko)") in capsys.readouterr().err


def test_relaxrun_exits_1_instead_of_a_signal(files):
    result = subprocess.run([sys.executable, "-m", "relaxrun", "--list-functions", str(files / "bad.vmx")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("relaxrun: error: " + REFUSAL.format(f"{files / 'bad.vmx'}(bad.ko)"))


def test_relax_load_raises_a_user_error(files):
    with pytest.raises(UserError, match="is not a valid kernel object"):
        relax.load(str(files / "bad.vmx"))
