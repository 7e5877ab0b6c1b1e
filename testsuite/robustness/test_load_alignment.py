"""Objects whose section headers claim less alignment than their code assumes still run.

A .ko whose .rodata alignment was lowered from 64 to 8, its code hashes recomputed, passed
every check and made relaxrun die of SIGSEGV on an aligned vector load of a constant
(fuzz seed 20261202, case 4906). The loader now aligns every allocated section to at
least LOAD_ALIGNMENT (runtime/kernels/elf_alignment.py).
"""

from __future__ import annotations

import subprocess

from fuzz_corpus import REPO
from mutate_artifact import KO_OBJECT, _rehash
from mutate_bytes import Container
from mutate_elf import SECTION_HEADER, SHF_ALLOC, _sections, _write_field

from relax.runtime.kernels.elf_alignment import LOAD_ALIGNMENT, with_load_alignment


SAMPLES = REPO / "samples"  # elementwise.relax: its kernels load constants from a 64-byte aligned .rodata


def _underaligned(data: bytes) -> bytes:
    """Every allocated section of an ELF64 object aligned to 1 byte."""
    for section in _sections(data):
        if section["sh_flags"] & SHF_ALLOC:
            data = _write_field(data, section["at"], SECTION_HEADER["sh_addralign"], 1)
    return data


def test_allocated_sections_are_raised_and_the_rest_kept(tmp_path):
    from elf_objects import compiled_object

    original = compiled_object("x86_64-linux-gnu")
    raised = with_load_alignment(_underaligned(original))
    for before, after in zip(_sections(original), _sections(raised)):
        if before["sh_flags"] & SHF_ALLOC:
            assert after["sh_addralign"] == max(LOAD_ALIGNMENT, before["sh_addralign"])
        else:
            assert after["sh_addralign"] == before["sh_addralign"]
    assert with_load_alignment(b"not an object") == b"not an object"


def test_an_underaligned_kernel_object_runs(tmp_path):
    vms, vmo, ko = (tmp_path / f"m.{ext}" for ext in ("vms", "vmo", "ko"))
    subprocess.run(["relaxc", "-S", str(SAMPLES / "elementwise.relax"), "-o", str(vms)], check=True)
    subprocess.run(["relaxas", str(vms), "-o", str(vmo)], check=True)
    subprocess.run(["relaxc", "--emit", "kernels", str(vms), "-o", str(ko)], check=True)
    container = Container.parse(ko.read_bytes())
    for entry in container.sections:
        if entry[0] == KO_OBJECT:
            old = entry[2]
            entry[2] = _underaligned(old)
            _rehash(container, old, entry[2])
    (tmp_path / "bad.ko").write_bytes(container.build())
    subprocess.run(["relaxld", str(vmo), str(tmp_path / "bad.ko"), "-o", str(tmp_path / "m.vmx")], check=True)
    run = subprocess.run(["relaxrun", str(tmp_path / "m.vmx"), "--input", f"@{SAMPLES / 'data/elementwise.inputs.npz'}",
                          "--expected-output", f"@{SAMPLES / 'data/elementwise.expected.npz'}"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
