"""What the robustness fuzzer mutates: the samples built by the real tools, and sources.

Each sample is built the way samples/Makefile builds it (relaxc -S, relaxas, relaxc
--emit kernels, relaxld), plus its listing (relaxas --dump text) and a signed .vmx
(relaxld --sign, with a key made once by relaxld --gen-key), in a directory
that is reused while the sources of the samples and of the toolchain are unchanged
(the key is a hash of them). The source seeds are the samples' and the testsuite's
.relax files.
"""

from __future__ import annotations

import hashlib
import io
import pathlib
import sys
from dataclasses import dataclass, field

import numpy as np
from fuzz_process import Runner, Step
from mutate_bytes import Container, build_vmo, reseal, vmo_sections

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
TESTSUITE = REPO / "testsuite"
TOOLCHAIN = ("lib", "relaxc", "relaxas", "relaxld", "relaxrun")
# What samples/Makefile passes for a sample beyond the defaults (LDFLAGS_<name>, RUNFLAGS).
LINK_FLAGS = {"packed_call": ("--allow-undefined", "samples.*")}
PLUGINS = {"packed_call": "host_functions.py"}


class CorpusError(Exception):
    """A sample that does not build, or a format the fuzzer's model no longer matches."""


@dataclass
class Sample:
    """One sample, built: its files' bytes and its inputs."""

    name: str
    files: dict                 # "source", "vms", "vmasm", "vmo", "ko", "vmx", "signed" (a .vmx), "trusted key",
    #                             "inputs", "expected" -> bytes
    inputs: dict                # parameter name -> array, in parameter order
    expected: dict              # result key -> array
    link_flags: tuple = ()
    plugin: bytes | None = None

    def run_flags(self) -> list[str]:
        return ["--plugin", "plugin.py"] if self.plugin else []

    def support_files(self) -> dict:
        return {"plugin.py": self.plugin} if self.plugin else {}


@dataclass
class Corpus:
    samples: list[Sample]
    sources: list[tuple[str, str]] = field(default_factory=list)   # (name, text) of every .relax seed

    def others(self, sample: Sample, kind: str) -> list[bytes]:
        return [s.files[kind] for s in self.samples if s is not sample]


def source_seeds() -> list[tuple[str, str]]:
    paths = sorted(SAMPLES.glob("*.relax")) + sorted(p for p in TESTSUITE.rglob("*.relax") if "Output" not in p.parts)
    return [(str(path.relative_to(REPO)), path.read_text()) for path in paths]


def toolchain_key(names: list[str]) -> str:
    digest = hashlib.sha256(sys.version.encode() + pathlib.Path(__file__).read_bytes())  # and how it is built
    for top in TOOLCHAIN:
        for path in sorted((REPO / top).rglob("*.py")) + sorted((REPO / top).rglob("*.ll")):
            digest.update(str(path.relative_to(REPO)).encode() + path.read_bytes())
    for name in names:
        digest.update((SAMPLES / f"{name}.relax").read_bytes())
    return digest.hexdigest()[:16]


def _build_steps(name: str) -> list[Step]:
    link = LINK_FLAGS.get(name, ())
    return [Step("relaxc", ("-S", f"{name}.relax", "-o", f"{name}.vms")),
            Step("relaxas", (f"{name}.vms", "-o", f"{name}.vmo")),
            Step("relaxas", ("--dump", "text", f"{name}.vmo", "-o", f"{name}.vmasm")),
            Step("relaxc", ("--emit", "kernels", f"{name}.vms", "-o", f"{name}.ko")),
            Step("relaxld", (f"{name}.vmo", f"{name}.ko", *link, "-o", f"{name}.vmx")),
            Step("relaxld", (f"{name}.vmo", f"{name}.ko", *link, "--sign", "key.pem", "-o", f"{name}.signed.vmx"))]


def _build(runner: Runner, directory: pathlib.Path, step: Step) -> None:
    outcome = runner.run(step, str(directory), "build")
    if outcome.kind != "ok":
        raise CorpusError(f"building the corpus: `{step.shell()}` in {directory}: {outcome.describe()}\n"
                          f"{outcome.stderr}")


def _arrays(data: bytes) -> dict:
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        return {key: archive[key] for key in archive.files}


def build_corpus(runner: Runner, directory: pathlib.Path, names: list[str], log=print) -> Corpus:
    """Builds (or finds built) every named sample under `directory`/KEY."""
    built = directory / toolchain_key(names)
    built.mkdir(parents=True, exist_ok=True)
    if not (built / "key.pem.pub").exists():
        _build(runner, built, Step("relaxld", ("--gen-key", "key.pem")))
    samples = []
    for name in names:
        if not (built / f"{name}.done").exists():
            (built / f"{name}.relax").write_bytes((SAMPLES / f"{name}.relax").read_bytes())
            for step in _build_steps(name):
                _build(runner, built, step)
            (built / f"{name}.done").write_text("")
        files = {kind: (built / f"{name}.{suffix}").read_bytes() for kind, suffix in
                 (("source", "relax"), ("vms", "vms"), ("vmasm", "vmasm"), ("vmo", "vmo"), ("ko", "ko"),
                  ("vmx", "vmx"), ("signed", "signed.vmx"))}
        files["trusted key"] = (built / "key.pem.pub").read_bytes()
        for kind in ("inputs", "expected"):
            files[kind] = (SAMPLES / "data" / f"{name}.{kind}.npz").read_bytes()
        plugin = (SAMPLES / PLUGINS[name]).read_bytes() if name in PLUGINS else None
        samples.append(Sample(name, files, _arrays(files["inputs"]), _arrays(files["expected"]),
                              LINK_FLAGS.get(name, ()), plugin))
    for sample in samples:
        check_seals(sample)
    log(f"fuzz: corpus of {len(samples)} samples in {built}")
    return Corpus(samples, source_seeds())


def check_seals(sample: Sample) -> None:
    """The fuzzer's model of each format (mutate_bytes.py) gives back the toolchain's own bytes;
    where a format has changed, this says so, rather than every resealed case being refused at
    the checksum and the checks under it going untested."""
    models = {"vmx": lambda data: Container.parse(data).build(), "ko": lambda data: Container.parse(data).build(),
              "vmo": lambda data: build_vmo(*vmo_sections(data)), "signed": lambda data: Container.parse(data).build()}
    for kind, rebuild in models.items():
        data = sample.files[kind]
        if rebuild(data) != data or reseal(data, "vmo" if kind == "vmo" else "vmx") != data:
            raise CorpusError(f"the fuzzer's model of the .{kind} format no longer matches the toolchain's "
                               f"{sample.name}.{kind}: update testsuite/robustness/mutate_bytes.py")


def sample_names() -> list[str]:
    return sorted(path.stem for path in SAMPLES.glob("*.relax") if (SAMPLES / "data" / f"{path.stem}.inputs.npz").exists())
