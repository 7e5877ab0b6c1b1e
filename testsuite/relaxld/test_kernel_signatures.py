"""Each kernel's code bound to its own signature inside its object (.ko format 0.5, issue 16):
another model's object under this model's metadata, code hashes recomputed, is refused
before LLVM sees it (the fuzzer's transplant:object+code-hashes, a heap overflow before)."""

import dataclasses
import hashlib
import json
import struct

import pytest

from relax.build import build
from relax.diagnostics import UserError
from relax.runtime.kernels import container, kernel_signatures
from relax.script import parse
from relax.vm.artifact import vmx
from relax.vm.artifact.linker import LinkInput, link
from relaxrun.cli import main as relaxrun

ADD = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(({n},), dtype="float32"), y: R.Tensor(({n},), dtype="float32")) -> R.Tensor(({n},), dtype="float32"):
        z: R.Tensor(({n},), dtype="float32") = R.add(x, y)
        return z
'''


@pytest.fixture(scope="module")
def models():
    """Two models with a kernel 'add': float32[4] and float32[64] (which writes 64 floats)."""
    built = {}
    for key, n in (("a", 4), ("wide", 64)):
        exe = build(parse(ADD.format(n=n)), "llvm")
        built[key] = (exe.save_to_bytes(), exe.kernel_objects[0])
    return built


def _transplanted(models) -> bytes:
    """Model a's .ko with model wide's native object, written anew: code hashes and checksum
    recomputed, as the fuzzer's transplant does."""
    mine, theirs = container.read(models["a"][1]), container.read(models["wide"][1])
    return container.write(dataclasses.replace(mine, objects={0: theirs.objects[0]}))


def test_a_written_ko_is_format_0_5_and_stores_each_signature(models):
    data = models["a"][1]
    assert struct.unpack_from("<HH", data, 8) == (0, 5)
    kernel_object = container.read(data)
    info = kernel_object.kernel("add")
    digest = kernel_signatures.signature_digest(info)
    assert digest == hashlib.sha256(kernel_signatures.canonical_signature(info)).digest()
    assert json.loads(kernel_signatures.canonical_signature(info))["symbol"] == "relaxk_add"
    assert b"__relax_signature_relaxk_add" in kernel_object.objects[0] and digest in kernel_object.objects[0]


def test_another_models_object_with_recomputed_code_hashes_is_refused(tmp_path, models, capsys):
    swapped = _transplanted(models)
    with pytest.raises(UserError, match=r"^'s.ko' is not a valid kernel object: target 0 \([^)]*\): kernel 'add': "
                                        r"the object's code was built for another signature$"):
        container.read(swapped, "s.ko")
    # Slipped into a linked artifact, every checksum of the .vmx recomputed: relaxrun exits 1.
    good = vmx.read(link(LinkInput("a.vmo", models["a"][0]), [LinkInput("a.ko", models["a"][1])]).data)
    inputs = (good.info.inputs[0], {**good.info.inputs[1], "size": len(swapped), "sha256": vmx.sha256_hex(swapped)})
    artifact = vmx.Artifact(dataclasses.replace(good.info, inputs=inputs), good.bytecode, (swapped,))
    (tmp_path / "s.vmx").write_bytes(vmx.write(artifact))
    assert relaxrun([str(tmp_path / "s.vmx"), "--input", "4xf32=1", "--input", "4xf32=2"]) == 1
    assert "kernel 'add': the object's code was built for another signature" in capsys.readouterr().err


def test_a_missing_signature_is_refused_and_format_0_4_is_read_as_before(models):
    data = bytearray(models["a"][1])
    kernel_object = container.read(bytes(data))
    native = kernel_object.objects[0].replace(b"__relax_signature_relaxk_add", b"__relax_signaturX_relaxk_add")
    renamed = container.write(dataclasses.replace(kernel_object, objects={0: native}))
    with pytest.raises(UserError, match=r"built for another signature \(it has no '__relax_signature_relaxk_add'\)"):
        container.read(renamed, "m.ko")
    # The same bytes as a 0.4 file (no signatures required; checksum recomputed) read as before.
    old = bytearray(container.write(dataclasses.replace(kernel_object, objects={0: native})))
    struct.pack_into("<HH", old, 8, 0, 4)
    old[24:56] = hashlib.sha256(bytes(old[56:])).digest()
    assert container.read(bytes(old), "old.ko").kernel("add") is not None


@pytest.mark.parametrize("target", ["llvm -mtriple=aarch64-linux-gnu",
                                    "llvm -mtriple=riscv64-linux-gnu -mattr=+m,+a,+f,+d,+c"])
def test_cross_targets_store_signatures_that_are_checked(target):
    kernel_object = container.read(build(parse(ADD.format(n=4)), target).kernel_objects[0], "x.ko")
    digest = kernel_signatures.signature_digest(kernel_object.kernel("add"))
    native = kernel_object.objects[0]
    assert native.count(digest) == 1
    altered = native.replace(digest, bytes([digest[0] ^ 1]) + digest[1:])
    with pytest.raises(UserError, match=r"kernel 'add': the object's code was built for another signature$"):
        container.read(container.write(dataclasses.replace(kernel_object, objects={0: altered})), "x.ko")


def test_bitcode_compiled_on_load_is_checked_too(models):
    """Another model's bitcode under this metadata (hashes recomputed): what LLVM compiles from
    it on load stores the other signature, and is refused before MCJIT links it."""
    from relax.runtime.kernels.library import load_kernel_library

    mine, theirs = container.read(models["a"][1]), container.read(models["wide"][1])
    assert load_kernel_library(mine, "a.ko", prefer="bitcode").get_function("add") is not None
    swapped = container.read(container.write(dataclasses.replace(mine, bitcode={0: theirs.bitcode[0]})), "s.ko")
    with pytest.raises(UserError, match=r"^'s.ko' is not a valid kernel object: the bitcode of target 0 \([^)]*\): "
                                        r"kernel 'add': the object's code was built for another signature$"):
        load_kernel_library(swapped, "s.ko", prefer="bitcode")
