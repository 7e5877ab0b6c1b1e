"""Signed .vmx artifacts (relax.vm.artifact.signing): relaxld/relaxc --sign, relaxld --gen-key,
relaxrun --trust, relax.load(trust=...), `relaxas --dump stats`; unsigned files keep their bytes."""

import hashlib
import os
import pathlib
import stat
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relax
from relax.build import build
from relax.diagnostics import UserError
from relax.driver.compile import parse_source
from relax.runtime import register_func
from relax.vm.artifact import signing, vmx
from relax.vm.artifact.linker import LinkInput, link
from relaxas.cli import main as relaxas
from relaxc.cli import main as relaxc
from relaxld.cli import main as relaxld
from relaxrun.cli import main as relaxrun

TINY = pathlib.Path(__file__).resolve().parents[1] / "relaxld" / "Inputs" / "tiny.relax"


@register_func("user.scale", override=True)
def _scale(x):
    return x * np.float32(2)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """tiny's .vmo and .ko, two key pairs, and the artifact linked unsigned and signed by `key`."""
    root = tmp_path_factory.mktemp("signing")
    exe = build(parse_source(str(TINY)), "llvm")
    (root / "t.vmo").write_bytes(exe.save_to_bytes())
    (root / "t.ko").write_bytes(exe.kernel_objects[0])
    (root / "keys").mkdir()
    for name in ("key", "other"):
        assert relaxld(["--gen-key", str(root / "keys" / f"{name}.pem")]) == 0
    link_args = [str(root / "t.vmo"), str(root / "t.ko"), "--allow-undefined", "user.*"]
    assert relaxld(link_args + ["-o", str(root / "unsigned.vmx")]) == 0
    assert relaxld(link_args + ["--sign", str(root / "keys" / "key.pem"), "-o", str(root / "signed.vmx")]) == 0
    return root


def _run(path, *args):
    return relaxrun([str(path), "--input", "4xf32=1,-1,2,-3", *args])


def test_gen_key_writes_a_private_key_only_its_owner_reads_and_never_overwrites(files, capsys):
    private, public = files / "keys" / "key.pem", files / "keys" / "key.pem.pub"
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    assert private.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert public.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    before = private.read_bytes()
    assert relaxld(["--gen-key", str(private)]) == 1
    assert "exists; refusing to overwrite a key" in capsys.readouterr().err
    assert private.read_bytes() == before
    assert relaxld(["--gen-key", str(files / "x.pem"), str(files / "t.vmo")]) == 2


def test_signed_artifact_runs_under_trust(files, capsys):
    assert _run(files / "signed.vmx", "--trust", str(files / "keys" / "key.pem.pub")) == 0
    assert capsys.readouterr().out == "result[0]: 4xf32=[5 0 10 0]\n"


def test_python_api_takes_trust(files):
    exe = relax.load(str(files / "signed.vmx"), trust=[files / "keys" / "key.pem.pub"])
    assert exe.signature.public_key == signing.SigningKey.read(str(files / "keys" / "key.pem")).public_key
    with pytest.raises(UserError, match="is unsigned"):
        relax.load(str(files / "unsigned.vmx"), trust=str(files / "keys"))


def test_unsigned_artifacts_and_bytecode_objects_are_refused_under_trust(files, capsys):
    for path, why in [(files / "unsigned.vmx", "is unsigned; only artifacts signed by a trusted key"),
                      (files / "t.vmo", "is unsigned: only a linked artifact (.vmx) carries a signature")]:
        assert _run(path, "--trust", str(files / "keys" / "key.pem.pub")) == 1
        assert why in capsys.readouterr().err


def test_an_untrusted_key_is_refused_with_its_fingerprint(files, capsys):
    assert _run(files / "signed.vmx", "--trust", str(files / "keys" / "other.pem.pub")) == 1
    signer = signing.SigningKey.read(str(files / "keys" / "key.pem")).fingerprint
    err = capsys.readouterr().err
    assert f"'{files / 'signed.vmx'}' is signed by an untrusted key {signer} (trusted: SHA256:" in err
    assert len(signer) == len("SHA256:") + signing.FINGERPRINT_DIGITS


def _flip_and_rehash(data: bytes, position: int) -> bytes:
    blob = bytearray(data)
    blob[position] ^= 1
    blob[24:56] = hashlib.sha256(bytes(blob[56:])).digest()
    return bytes(blob)


def _bytecode_offset(data: bytes) -> int:
    for number in range(struct.unpack_from("<I", data, 12)[0]):
        kind, _, offset, _ = vmx.SECTION.unpack_from(data, vmx.HEADER.size + vmx.SECTION.size * number)
        if vmx.SECTION_KINDS[kind] == "bytecode":
            return offset
    raise AssertionError("no bytecode section")


def test_a_changed_byte_behind_a_recomputed_checksum_is_a_bad_signature(files, capsys):
    data = (files / "signed.vmx").read_bytes()
    tampered = files / "tampered.vmx"
    tampered.write_bytes(_flip_and_rehash(data, _bytecode_offset(data) + 40))
    assert _run(tampered, "--trust", str(files / "keys")) == 1
    assert "has a bad signature: its bytes are not what key SHA256:" in capsys.readouterr().err
    assert relaxas(["--dump", "stats", str(tampered)]) == 1  # without trust, the embedded hashes refuse it


def test_trust_is_checked_before_any_bytecode_or_kernel_is_read(files, monkeypatch):
    from relax.vm.artifact import load_export

    monkeypatch.setattr(load_export.Executable, "load_from_bytes", lambda *a: pytest.fail("bytecode read"))
    monkeypatch.setattr(load_export, "read_kernel_objects", lambda *a: pytest.fail("kernels read"))
    with pytest.raises(UserError, match="untrusted key"):
        relax.load(str(files / "signed.vmx"), trust=files / "keys" / "other.pem.pub")


@pytest.fixture(scope="module")
def trusted(files):
    return signing.trusted_keys(files / "keys")


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_no_changed_bit_of_a_signed_file_passes_trust(files, trusted, data):
    blob = (files / "signed.vmx").read_bytes()
    position = data.draw(st.integers(8, len(blob) - 1).filter(lambda p: not 24 <= p < 56))
    with pytest.raises(UserError):
        vmx.read(_flip_and_rehash(blob, position), "t.vmx", trusted)


def test_a_directory_of_keys(files, tmp_path, capsys):
    only_other = tmp_path / "only_other"
    only_other.mkdir()
    (only_other / "other.pub").write_bytes((files / "keys" / "other.pem.pub").read_bytes())
    (only_other / "notes.txt").write_text("not a key, not read")
    assert _run(files / "signed.vmx", "--trust", str(only_other)) == 1
    assert "untrusted key" in capsys.readouterr().err
    (only_other / "key.pem").write_bytes((files / "keys" / "key.pem.pub").read_bytes())
    assert _run(files / "signed.vmx", "--trust", str(only_other)) == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _run(files / "signed.vmx", "--trust", str(empty)) == 1
    assert "holds no public keys (*.pub, *.pem)" in capsys.readouterr().err


@pytest.mark.parametrize("key, why", [
    ("keys/key.pem", "is a private key; trust its public key"),
    ("t.vmo", "not a public key in PEM"),
    ("missing.pub", "no such file or directory"),
])
def test_bad_trusted_keys_are_errors(files, capsys, key, why):
    assert _run(files / "signed.vmx", "--trust", str(files / key)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"relaxrun: error: trusted key '{files / key}'") and why in err


def test_bad_signing_keys_are_errors(files, capsys):
    link_args = [str(files / "t.vmo"), str(files / "t.ko"), "--allow-undefined", "user.*", "-o", str(files / "x.vmx")]
    for key, why in [("keys/key.pem.pub", "not a private key in PEM (PKCS#8)"), ("nothing.pem", "no such file")]:
        assert relaxld(link_args + ["--sign", str(files / key)]) == 1
        assert why in capsys.readouterr().err
    assert not (files / "x.vmx").exists()


def test_dump_stats_shows_the_signer(files, capsys):
    key = signing.SigningKey.read(str(files / "keys" / "key.pem"))
    assert relaxas(["--dump", "stats", str(files / "signed.vmx")]) == 0
    out = capsys.readouterr().out
    assert "Link metadata (.vmx format 0.2, " in out
    assert out.endswith(f"  Signer: ed25519 {key.fingerprint} (signature valid)\n")
    assert relaxas(["--dump", "stats", str(files / "unsigned.vmx")]) == 0
    out = capsys.readouterr().out
    assert "Link metadata (.vmx format 0.1, " in out and out.endswith("  Signer: unsigned\n")
    forged = files / "forged.vmx"
    forged.write_bytes(_flip_and_rehash((files / "signed.vmx").read_bytes(), -1))  # in the signature itself
    assert relaxas(["--dump", "stats", str(forged)]) == 0
    assert capsys.readouterr().out.endswith("(bad signature: the file changed after signing)\n")


def test_signing_adds_only_the_signature(files):
    """The unsigned bytes are today's, at format 0.1; a signed file is the same container at
    0.2 plus a last section; stripping the signature gives the unsigned file back."""
    unsigned, signed = (files / "unsigned.vmx").read_bytes(), (files / "signed.vmx").read_bytes()
    assert struct.unpack_from("<HH", unsigned, 8) == (0, 1) and struct.unpack_from("<HH", signed, 8) == (0, 2)
    assert vmx.write(vmx.read(signed)) == unsigned
    assert len(signed) - len(unsigned) == vmx.SECTION.size + 8 + signing.PAYLOAD_SIZE  # entry, padding, payload


def _fixed_artifact():
    info = vmx.LinkInfo("relax 0.1.0", {"allow_undefined": ["user.*"], "target_check": False},
                        ({"kind": "vmo", "name": "m.vmo", "size": 3, "sha256": vmx.sha256_hex(b"vmo")},
                         {"kind": "ko", "name": "m.ko", "size": 5, "sha256": vmx.sha256_hex(b"kobj!")}),
                        (), ({"name": "add", "resolution": "kernel", "kernel_objects": [0]},))
    return vmx.Artifact(info, b"vmo", (b"kobj!",))


def _fixed_key():
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return signing.SigningKey.of(ed25519.Ed25519PrivateKey.from_private_bytes(bytes(range(32))))


def test_the_layouts_are_pinned():
    """The unsigned bytes are those written before signatures existed (CLI.md determinism);
    Ed25519 is deterministic, so signed ones are fixed too."""
    unsigned = vmx.write(_fixed_artifact())
    assert hashlib.sha256(unsigned).hexdigest() == "5e8b56d4d73fdab9a076be89f5ee7f590b6cbf079f4eeaa6afd24c3151846843"
    signed = vmx.write(_fixed_artifact(), _fixed_key())
    assert hashlib.sha256(signed).hexdigest() == "0458bf1afc50dae08b5d5dab6fc4ccb9e85815e9b2535c682796d8e9c67bfdcd"
    # As docs/file-format-vmx.md says: the last 96 bytes are the public key and the signature of
    # the domain string and the SHA-256 of the file but its checksum and signature.
    public, signature = signed[-96:-64], signed[-64:]
    message = signing.DOMAIN + hashlib.sha256(signed[:24] + signed[56:-64]).digest()
    _fixed_key().private_key.public_key().verify(signature, message)  # raises if it does not verify
    assert public == _fixed_key().public_key and signed[:len(unsigned)] != unsigned


def test_relaxld_and_relaxc_sign_deterministically(files, tmp_path, capsys):
    key = str(files / "keys" / "key.pem")
    again = tmp_path / "again.vmx"
    assert relaxld([str(files / "t.vmo"), str(files / "t.ko"), "--allow-undefined", "user.*", "--sign", key,
                    "-o", str(again), "-v"]) == 0
    assert again.read_bytes() == (files / "signed.vmx").read_bytes()
    assert "relaxld: signed with ed25519 key SHA256:" in capsys.readouterr().err
    assert relaxc(["--sign", key, "-S", str(TINY), "-o", str(tmp_path / "t.vms")]) == 2


def test_relaxc_one_shot_signs(files, tmp_path, capsys):
    out = tmp_path / "one.vmx"
    assert relaxc([str(TINY), "--allow-undefined", "user.*", "--sign", str(files / "keys" / "key.pem"),
                   "-o", str(out)]) == 0
    assert _run(out, "--trust", str(files / "keys" / "key.pem.pub")) == 0
    assert capsys.readouterr().out == "result[0]: 4xf32=[5 0 10 0]\n"


def test_loading_without_trust_does_not_import_cryptography(files):
    code = ("import sys, relax; exe = relax.load(sys.argv[1]); "
            "sys.exit(2 if exe.signature is None else 1 if 'cryptography' in sys.modules else 0)")
    result = subprocess.run([sys.executable, "-c", code, str(files / "signed.vmx")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_link_and_sign_in_process_match_relaxld(files):
    """vmx.sign re-signs: the same key over the same link gives relaxld's bytes."""
    data = link(LinkInput("t.vmo", (files / "t.vmo").read_bytes()),
                [LinkInput("t.ko", (files / "t.ko").read_bytes())], ("user.*",)).data
    key = signing.SigningKey.read(str(files / "keys" / "key.pem"))
    assert vmx.sign(data, key) == (files / "signed.vmx").read_bytes()
    assert vmx.sign(vmx.sign(data, key), key) == (files / "signed.vmx").read_bytes()
