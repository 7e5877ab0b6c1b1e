"""The .vmx reader: round trip, determinism, and clean refusal of truncated, flipped,
foreign or newer files (relax.vm.artifact.vmx, relax.vm.artifact.load_export)."""

import hashlib
import pathlib
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relax.vm
from relax.build import build
from relax.diagnostics import UserError
from relax.driver.compile import parse_source
from relax.runtime import register_func
from relax.vm.artifact import vmx
from relax.vm.artifact.load_export import load_artifact
from relax.vm.artifact.linker import LinkInput, link

TINY = pathlib.Path(__file__).resolve().parents[1] / "relaxld" / "Inputs" / "tiny.relax"


@register_func("user.scale", override=True)
def _scale(x):
    return x * np.float32(2)


@pytest.fixture(scope="module")
def linked():
    exe = build(parse_source(str(TINY)), "llvm")
    vmo, ko = exe.save_to_bytes(), exe.kernel_objects[0]
    return vmo, ko, link(LinkInput("out/tiny.vmo", vmo), [LinkInput("out/tiny.ko", ko)], ("user.*",)).data


def test_round_trip_runs_and_embeds_the_vmo_unchanged(linked):
    vmo, ko, data = linked
    artifact = vmx.read(data, "t.vmx")
    assert artifact.bytecode == vmo and artifact.kernel_objects == (ko,)
    assert [entry["name"] for entry in artifact.info.inputs] == ["tiny.vmo", "tiny.ko"]
    assert artifact.info.flags == {"allow_undefined": ["user.*"], "target_check": False}
    exe = load_artifact(data, "t.vmx")
    out = relax.vm.VirtualMachine(exe, "cpu")["main"](np.array([1, -1, 2, -3], np.float32))
    np.testing.assert_array_equal(out, [5, 0, 10, 0])
    assert vmx.write(artifact) == data  # reading and writing again gives the same bytes


def test_link_is_deterministic(linked):
    vmo, ko, data = linked
    assert link(LinkInput("tiny.vmo", vmo), [LinkInput("tiny.ko", ko)], ("user.*",)).data == data


def test_relax_vm_load_reads_a_vmx_by_its_magic(linked, tmp_path):
    path = tmp_path / "renamed.bin"
    path.write_bytes(linked[2])
    exe = relax.vm.load(str(path))
    assert exe.save_to_bytes() == linked[0] and len(exe.imports) == 1


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_truncated_files_are_refused_cleanly(linked, data):
    blob = linked[2]
    cut = data.draw(st.integers(0, len(blob) - 1))
    with pytest.raises(UserError, match=r"not a valid linked artifact|too short|unknown magic"):
        relax.vm.load_bytes(blob[:cut], "t.vmx")


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_flipped_bits_are_refused_cleanly(linked, data):
    blob = bytearray(linked[2])
    position = data.draw(st.integers(0, len(blob) - 1))
    blob[position] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(UserError):
        relax.vm.load_bytes(bytes(blob), "t.vmx")


def _rehash(blob: bytearray) -> bytes:
    blob[24:56] = hashlib.sha256(bytes(blob[56:])).digest()
    return bytes(blob)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_flips_behind_a_valid_checksum_are_caught_by_the_inner_checks(linked, data):
    """A writer bug or a forged file: the section table, manifest and embedded files are checked too."""
    blob = bytearray(linked[2])
    position = data.draw(st.integers(8, len(blob) - 1).filter(lambda p: not 24 <= p < 56))
    blob[position] ^= 1 << data.draw(st.integers(0, 7))
    try:
        load_artifact(_rehash(blob), "t.vmx", import_kernels=False)
    except UserError:
        pass  # refused with a message; anything else (a crash) fails the test


def test_a_newer_format_version_says_so(linked):
    blob = bytearray(linked[2])
    struct.pack_into("<HH", blob, 8, 0, 9)
    with pytest.raises(UserError, match=r"format version 0.9, newer than the supported 0.2; relink it"):
        vmx.read(_rehash(blob), "t.vmx")


def test_an_embedded_file_must_match_its_recorded_hash(linked):
    artifact = vmx.read(linked[2], "t.vmx")
    # The last byte flipped (set to 0 it was no change where the .vmo's checksum ends in 0,
    # as it does for one clone path in 256: the source path is in the bytecode).
    forged = vmx.Artifact(artifact.info, artifact.bytecode[:-1] + bytes([artifact.bytecode[-1] ^ 0xFF]),
                          artifact.kernel_objects)
    with pytest.raises(UserError, match=r"the embedded vmo 'tiny.vmo' does not match its recorded hash"):
        vmx.read(vmx.write(forged), "t.vmx")


@pytest.mark.parametrize("version", [0, 2, 1 << 40])
def test_a_target_the_kernel_objects_do_not_have_is_refused(linked, version):
    # A manifest whose targets.0.abi_version was changed still ran (issue 16).
    artifact = vmx.read(linked[2], "t.vmx")
    targets = tuple({**target, "abi_version": version} for target in artifact.info.targets)
    info = vmx.LinkInfo(artifact.info.producer, artifact.info.flags, artifact.info.inputs, targets,
                        artifact.info.symbols)
    data = vmx.write(vmx.Artifact(info, artifact.bytecode, artifact.kernel_objects))
    vmx.read(data, "t.vmx")  # the container is sound: relaxas --dump shows it
    with pytest.raises(UserError, match=rf"^'t.vmx' is not a valid linked artifact \(.vmx\): the manifest's target 0 "
                                        rf"\(.*, kernel ABI version {version}\) is not one of kernel object 0's "
                                        r"\(.* with kernel ABI version 1\)$"):
        load_artifact(data, "t.vmx", import_kernels=False)


def test_a_foreign_file_is_refused(tmp_path):
    path = tmp_path / "x.vmx"
    path.write_bytes(b"PK\3\4" + bytes(60))
    with pytest.raises(UserError, match="unknown magic number"):
        relax.vm.load(str(path))


def test_an_artifact_for_another_machine_names_its_targets_and_the_host():
    from relax.codegen.build_kernels import build_kernel_object
    from relax.target import parse_target

    mod = parse_source(str(TINY))
    exe = build(mod, "llvm")
    lowered = relax.build.lower(mod)
    arm = build_kernel_object(lowered, [parse_target("llvm -mtriple=aarch64-linux-gnu")])
    data = link(LinkInput("tiny.vmo", exe.save_to_bytes()), [LinkInput("arm.ko", arm)], ("user.*",)).data
    with pytest.raises(UserError, match=r"has no kernels that run on this host \(.*, cpu .*\); "
                                        r"its targets: aarch64-linux-gnu -mcpu=generic"):
        load_artifact(data, "arm.vmx")
    assert load_artifact(data, "arm.vmx", import_kernels=False).imports == []


def test_export_links_what_relax_build_made(tmp_path):
    exe = build(parse_source(str(TINY)), "llvm")
    exe.export(str(tmp_path / "m.vmx"))
    loaded = relax.vm.load(str(tmp_path / "m.vmx"))
    assert loaded.link_info.flags["allow_undefined"] == ["*"]
    out = relax.vm.VirtualMachine(loaded, "cpu")["main"](np.ones(4, np.float32))
    np.testing.assert_array_equal(out, np.full(4, 5, np.float32))


def test_loading_a_vmx_imports_no_compiler_module(linked, tmp_path):
    path = tmp_path / "t.vmx"
    path.write_bytes(linked[2])
    code = ("import sys, relax.vm; relax.vm.load(sys.argv[1]); "
            "bad = [m for m in sys.modules if m.split('.')[0] == 'relax' and m.split('.')[1:2] in "
            "(['ir'], ['script'], ['transform'], ['op'], ['tir'], ['codegen'])]; print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
