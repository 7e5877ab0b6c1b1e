"""Kernel metadata bound to code (.ko format 0.4 code hashes) and kernel calls checked against
the kernels they bind to, by relaxld and again when a .vmx loads (issue 16, item 3)."""

import hashlib
import json
import pathlib

import pytest

from relax.build import build
from relax.diagnostics import UserError
from relax.runtime.kernels import container
from relax.script import parse
from relax.vm import load as load_vmx
from relax.vm.artifact import vmx
from relax.vm.artifact.linker import LinkInput, link
from relaxld.cli import main as relaxld
from relaxrun.cli import main as relaxrun

OLD_OBJECT = pathlib.Path(__file__).resolve().parents[1] / "codegen" / "data" / "abi1_parallel_launcher.ko"

ADD = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(({n},), dtype="{dtype}"), y: R.Tensor(({n},), dtype="{dtype}")) -> R.Tensor(({n},), dtype="{dtype}"):
        z: R.Tensor(({n},), dtype="{dtype}") = R.add(x, y)
        return z
'''

# Another model's kernel named 'add' that takes two buffers, not three.
ADD_ONE = '''
@I.ir_module
class Module:
    @T.prim_func
    def add(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[i] + T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        z = R.call_tir(cls.add, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
        return z
'''


def _build(text: str):
    exe = build(parse(text), "llvm")
    return exe.save_to_bytes(), exe.kernel_objects[0]


@pytest.fixture(scope="module")
def models():
    """Four models with a kernel 'add': float32[4] (the one linked), float32[64], float64[4], and
    one whose 'add' has two parameters."""
    return {"a": _build(ADD.format(n=4, dtype="float32")), "wide": _build(ADD.format(n=64, dtype="float32")),
            "f64": _build(ADD.format(n=4, dtype="float64")), "arity": _build(ADD_ONE)}


def _sections(data: bytes) -> tuple[tuple, list]:
    """(major, minor) and [kind, target, payload] of each section of a .ko."""
    _, major, minor, count, _, _ = container.HEADER.unpack_from(data)
    sections = []
    for index in range(count):
        kind, target, offset, size = container.SECTION.unpack_from(data, container.HEADER.size + 24 * index)
        sections.append([kind, target, data[offset:offset + size]])
    return (major, minor), sections


def _pack(version: tuple, sections: list) -> bytes:
    """A .ko of these sections with a recomputed checksum: what a hostile editor writes."""
    table, payload = [], bytearray()
    offset = start = container._align(container.HEADER.size + container.SECTION.size * len(sections))
    for kind, target, data in sections:
        table.append(container.SECTION.pack(kind, target, offset, len(data)))
        payload += b"\0" * (offset - start - len(payload)) + data
        offset = container._align(offset + len(data))
    head = container.HEADER.size + container.SECTION.size * len(sections)
    body = b"".join(table) + b"\0" * (start - head) + bytes(payload)
    return container.HEADER.pack(container.MAGIC, *version, len(sections), container.HEADER.size + len(body),
                                 hashlib.sha256(body).digest()) + body


def _edit_manifest(sections: list, change) -> None:
    document = json.loads(sections[0][2])
    change(document)
    sections[0][2] = json.dumps(document, sort_keys=True, indent=1).encode()


def _swapped(models) -> bytes:
    """model a's .ko with the native object of model wide (whose add writes 64 floats), checksum recomputed."""
    version, sections = _sections(models["a"][1])
    _, other = _sections(models["wide"][1])
    objects = [s for s in sections if s[0] == container.SECTION_CODES["object"]]
    objects[0][2] = [s for s in other if s[0] == container.SECTION_CODES["object"]][0][2]
    return _pack(version, sections)


def _write(tmp_path, **files) -> dict:
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / name.replace("_", ".")
        paths[name].write_bytes(data)
    return {name: str(path) for name, path in paths.items()}


def _hand_made_vmx(vmo: bytes, kos: list, names=("m.vmo", "k.ko")) -> bytes:
    """A .vmx packed without relaxld: every checksum right, the calls unchecked."""
    inputs = tuple({"kind": kind, "name": name, "size": len(data), "sha256": vmx.sha256_hex(data)}
                   for kind, name, data in [("vmo", names[0], vmo)] + [("ko", names[1], ko) for ko in kos])
    info = vmx.LinkInfo(producer=vmx.PRODUCER, flags={"allow_undefined": [], "target_check": False},
                        inputs=inputs, targets=(), symbols=({"name": "add", "resolution": "kernel", "kernel_objects": [0]},))
    return vmx.write(vmx.Artifact(info, vmo, tuple(kos)))


def test_a_written_ko_records_the_hash_of_each_code_section(models):
    version, sections = _sections(models["a"][1])
    assert version == (0, 5)  # 0.4 code hashes, with kernel signatures (test_kernel_signatures.py)
    recorded = json.loads(sections[0][2])["code"]
    assert [(entry["kind"], entry["target"]) for entry in recorded] == [
        (container.SECTION_KINDS[kind], target) for kind, target, _ in sections[1:]]
    assert [entry["sha256"] for entry in recorded] == [hashlib.sha256(data).hexdigest() for _, _, data in sections[1:]]


def test_another_models_object_is_refused_by_the_reader_relaxld_and_at_load(tmp_path, models, capsys):
    swapped = _swapped(models)
    with pytest.raises(UserError, match=r"'s.ko' is not a valid kernel object: the native object of target 0 "
                                        r"does not match the SHA-256 its manifest records"):
        container.read(swapped, "s.ko")
    paths = _write(tmp_path, a_vmo=models["a"][0], s_ko=swapped, good_ko=models["a"][1])
    assert relaxld([paths["a_vmo"], paths["s_ko"], "-o", str(tmp_path / "s.vmx")]) == 1
    assert "does not match the SHA-256" in capsys.readouterr().err
    # The same object slipped into a linked artifact, every checksum of the .vmx recomputed.
    good = vmx.read(link(LinkInput("a.vmo", models["a"][0]), [LinkInput("a.ko", models["a"][1])]).data)
    inputs = (good.info.inputs[0], {**good.info.inputs[1], "size": len(swapped), "sha256": vmx.sha256_hex(swapped)})
    artifact = vmx.Artifact(vmx.LinkInfo(good.info.producer, good.info.flags, inputs, good.info.targets,
                                         good.info.symbols), good.bytecode, (swapped,))
    (tmp_path / "s.vmx").write_bytes(vmx.write(artifact))
    with pytest.raises(UserError, match=r"s.vmx\(a.ko\)' is not a valid kernel object: the native object"):
        load_vmx(str(tmp_path / "s.vmx"))
    assert relaxrun([str(tmp_path / "s.vmx"), "--input", "4xf32=1", "--input", "4xf32=2"]) == 1
    assert "does not match the SHA-256" in capsys.readouterr().err


def test_code_hashes_that_do_not_name_the_sections_are_refused(models):
    version, sections = _sections(models["a"][1])
    missing = [list(s) for s in sections]
    _edit_manifest(missing, lambda document: document.pop("code"))
    with pytest.raises(UserError, match="the manifest records no code hashes"):
        container.read(_pack(version, missing), "m.ko")
    with pytest.raises(UserError, match="the manifest records 2 code sections, the file has 1"):
        container.read(_pack(version, sections[:2]), "m.ko")
    reordered = [sections[0], sections[2], sections[1]]
    with pytest.raises(UserError, match="code section 0 is the bitcode of target 0, the manifest records "
                                        "the native object of target 0 there"):
        container.read(_pack(version, reordered), "m.ko")


def test_an_older_format_without_code_hashes_still_links_and_runs(tmp_path, models, capsys):
    _, sections = _sections(models["a"][1])
    _edit_manifest(sections, lambda document: document.pop("code"))
    paths = _write(tmp_path, a_vmo=models["a"][0], old_ko=_pack((0, 1), sections))
    assert relaxld([paths["a_vmo"], paths["old_ko"], "-o", str(tmp_path / "old.vmx")]) == 0
    assert relaxrun([str(tmp_path / "old.vmx"), "--input", "4xf32=1", "--input", "4xf32=2"]) == 0
    assert "4xf32=[3 3 3 3]" in capsys.readouterr().out
    # The format 0.1 file the runtime tests keep (built before parts and code hashes) reads as before.
    assert container.HEADER.unpack_from(OLD_OBJECT.read_bytes())[1:3] == (0, 1)
    assert container.read(OLD_OBJECT.read_bytes()).kernel("serial") is not None


def test_a_kernel_of_another_dtype_is_refused_with_both_signatures(tmp_path, models, capsys):
    paths = _write(tmp_path, a_vmo=models["a"][0], f64_ko=models["f64"][1])
    assert relaxld([paths["a_vmo"], paths["f64_ko"], "-o", str(tmp_path / "x.vmx")]) == 1
    err = capsys.readouterr().err
    assert (f"relaxld: error: '{paths['a_vmo']}' calls kernel 'add' in function 'main' (main+0008) as "
            "add(float32[4], float32[4], float32[4]); "
            f"'{paths['f64_ko']}' defines add(A: float64[4], B: float64[4], T_add: float64[4]): "
            "argument 1 is a float32 tensor of rank 1, parameter 'A' is float64[4]") in err
    assert not (tmp_path / "x.vmx").exists()


def test_a_kernel_of_another_shape_or_arity_is_refused(tmp_path, models, capsys):
    paths = _write(tmp_path, a_vmo=models["a"][0], wide_ko=models["wide"][1], arity_ko=models["arity"][1])
    assert relaxld([paths["a_vmo"], paths["wide_ko"], "-o", str(tmp_path / "x.vmx")]) == 1
    assert "argument 1 has dimension 0 of 4, parameter 'A' needs 64" in capsys.readouterr().err
    assert relaxld([paths["a_vmo"], paths["arity_ko"], "-o", str(tmp_path / "x.vmx")]) == 1
    err = capsys.readouterr().err
    assert "calls kernel 'add' with 3 arguments in function 'main'" in err
    assert "defines add(A: float32[4], B: float32[4]) with 2 parameters" in err


def test_a_hand_made_vmx_whose_calls_do_not_fit_its_kernels_is_refused_at_load(tmp_path, models, capsys):
    path = tmp_path / "h.vmx"
    path.write_bytes(_hand_made_vmx(models["a"][0], [models["f64"][1]]))
    with pytest.raises(UserError, match=r"'.*h.vmx\(m.vmo\)' calls kernel 'add' in function 'main' .*"
                                        r"'.*h.vmx\(k.ko\)' defines add\(A: float64\[4\]"):
        load_vmx(str(path))
    assert relaxrun([str(path), "--input", "4xf32=1", "--input", "4xf32=2"]) == 1
    assert "calls kernel 'add'" in capsys.readouterr().err
    path.write_bytes(_hand_made_vmx(models["a"][0], [models["a"][1]]))  # the same, with the right kernels
    assert relaxrun([str(path), "--input", "4xf32=1", "--input", "4xf32=2"]) == 0
