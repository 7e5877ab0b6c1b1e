"""The pure parts of scripts/cross_check.py (make cross-check): apt output, the emulated
/proc/cpuinfo, wheel tags and unpacking. Nothing here downloads or emulates anything."""

import pathlib
import sys
import zipfile

import pytest

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))

import cross_qemu  # noqa: E402
import cross_sysroot  # noqa: E402

# `apt-cache depends --no-recommends ...` on bookworm, trimmed; virtual names and alternatives.
APT_DEPENDS = """\
python3.11:arm64
  Depends: python3.11-minimal:arm64
  Depends: libpython3.11-stdlib:arm64
 |Depends: <media-types:arm64>
    media-types
  Depends: <mime-support:arm64>
    mime-support
libc6:arm64
  Depends: libgcc-s1:arm64
libssl3:arm64
  PreDepends: libc6:arm64
 |Depends: <libfoo:arm64>
  Depends: libbar:arm64
  Depends: <libvirtual:arm64>
    libprovider:arm64
"""


def test_parse_depends_keeps_arm64_packages_and_first_alternatives():
    parsed = cross_sysroot.parse_depends(APT_DEPENDS)
    assert parsed == {
        "python3.11:arm64": ["python3.11-minimal:arm64", "libpython3.11-stdlib:arm64"],
        "libc6:arm64": ["libgcc-s1:arm64"],
        # <libfoo> has no provider: the next alternative; <libvirtual> is its provider
        "libssl3:arm64": ["libc6:arm64", "libbar:arm64", "libprovider:arm64"],
    }


def test_hwcap_names_follow_linux_bit_order():
    assert cross_qemu.hwcap_names(0b11, 0) == ["fp", "asimd"]
    assert cross_qemu.hwcap_names(1 << 22, 1 << 1 | 1 << 14) == ["sve", "sve2", "bf16"]
    assert cross_qemu.hwcap_names(0, 1 << 63) == []   # bits Linux 6.1 did not name are left out


def test_cpuinfo_names_the_neoverse_v1():
    text = cross_qemu.cpuinfo_text(cross_qemu.NEOVERSE_V1, ["fp", "asimd", "sve"], 2)
    blocks = text.strip().split("\n\n")
    assert len(blocks) == 2 and blocks[1].startswith("processor\t: 1\n")
    fields = dict(line.split(":", 1) for line in blocks[0].splitlines())
    assert {key.strip(): value.strip() for key, value in fields.items()} == {
        "processor": "0", "BogoMIPS": "50.00", "Features": "fp asimd sve", "CPU implementer": "0x41",
        "CPU architecture": "8", "CPU variant": "0x1", "CPU part": "0xd40", "CPU revision": "1",
    }


def test_manylinux_platforms_cover_every_glibc_up_to_the_sysroots():
    platforms = cross_sysroot.manylinux_platforms((2, 36))
    assert platforms[0] == "manylinux2014_aarch64"
    assert platforms[1] == "manylinux_2_17_aarch64" and platforms[-1] == "manylinux_2_36_aarch64"
    assert len(platforms) == 1 + 20


def test_glibc_version_from_the_libc6_package(tmp_path):
    debs = [tmp_path / "libbz2-1.0_1.0.8-5+b1_arm64.deb", tmp_path / "libc6_2.36-9+deb12u14_arm64.deb"]
    assert cross_sysroot.glibc_version(debs) == (2, 36)
    with pytest.raises(cross_sysroot.Unavailable):
        cross_sysroot.glibc_version(debs[:1])


def test_unpack_wheel_moves_purelib_and_drops_scripts(tmp_path):
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("demo/__init__.py", "X = 1\n")
        archive.writestr("demo-1.0.dist-info/METADATA", "Name: demo\n")
        archive.writestr("demo-1.0.data/purelib/demo_extra.py", "Y = 2\n")
        archive.writestr("demo-1.0.data/scripts/demo-tool", "#!python\n")
    site = tmp_path / "site"
    cross_sysroot.unpack_wheel(wheel, site)
    found = sorted(str(path.relative_to(site)) for path in site.rglob("*") if path.is_file())
    assert found == ["demo-1.0.dist-info/METADATA", "demo/__init__.py", "demo_extra.py"]


def test_relativize_symlinks_keeps_links_inside_the_root(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "real.py").write_text("")
    (tmp_path / "usr" / "lib").mkdir(parents=True)
    link = tmp_path / "usr" / "lib" / "link.py"
    link.symlink_to("/etc/real.py")
    cross_sysroot.relativize_symlinks(tmp_path)
    assert str(link.readlink()) == "../../etc/real.py"
    assert link.resolve() == (tmp_path / "etc" / "real.py").resolve()


def test_runtime_pins_are_the_installed_runtime_requirements():
    from importlib import metadata

    pins = cross_sysroot.runtime_pins()
    for name in ("numpy", "llvmlite", "click", "rich"):
        assert pins[name] == metadata.version(name)
    assert "pytest" not in pins   # the test extra is not the runtime's


def test_remote_step_runs_an_artifact_on_a_served_relaxrun(tmp_path):
    """cross_remote.remote_run with the host's relaxrun on both sides (make cross-check puts the
    emulated aarch64 one on the server side); a server that does not start is reported."""
    import cross_remote

    from relax.build import build
    from relax.script import parse

    samples = SCRIPTS.parent / "samples"
    artifact = tmp_path / "tuples.vmx"
    build(parse((samples / "tuples.relax").read_text(), "samples/tuples.relax")).export(str(artifact))
    key = cross_remote.write_key(tmp_path / "remote.key")
    relaxrun = [sys.executable, "-m", "relaxrun"]
    arguments = [str(artifact), "--input", f"@{samples / 'data' / 'tuples.inputs.npz'}",
                 "--expected-output", f"@{samples / 'data' / 'tuples.expected.npz'}"]
    ok, status, output = cross_remote.remote_run(relaxrun, None, relaxrun, arguments, key, serve_timeout=60)
    assert (ok, status) == (True, "ok"), output
    assert "relaxrun: session 127.0.0.1:" in output and ": sha256:" in output  # the server ran it
    ok, status, output = cross_remote.remote_run([sys.executable, "-c", "import sys; sys.stderr.write('no\\n')"],
                                                 None, relaxrun, arguments, key, serve_timeout=60)
    assert (ok, status) == (False, "SERVER DID NOT START") and output.startswith("no")
