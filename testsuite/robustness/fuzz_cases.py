"""The fuzz cases of each category: which file is mutated how, and which tools then run.

CATEGORIES is the table. A case is made from one random.Random, so (run seed, case
number) names it for good. It is a directory's worth of files (the mutated one,
the well-formed partners it is linked or run with, inputs) and a chain of tool runs:
each step runs when the one before exited 0, so a mutated source that compiles is
also run, and a damaged kernel object that links is also loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

from fuzz_corpus import Corpus, Sample
from fuzz_process import Step
from mutate_artifact import mutate_artifact
from mutate_bytes import BYTE_MUTATORS
from mutate_input import mutate_inputs
from mutate_source import GENERATORS, mutate_source

EXEC_MODES = ("interp", "compiled")


@dataclass
class Case:
    category: str
    label: str           # the mutation, e.g. "ko/elf:symbol:st_shndx"
    files: dict          # name -> bytes, written into the case's directory
    steps: list          # [Step]: each runs when the one before exited 0


def _inputs(sample: Sample) -> list[str]:
    return ["--input", "@inputs.npz", *sample.run_flags()]


def _exec_mode(rng) -> list[str]:
    return ["--exec-mode", "compiled"] if rng.random() < 0.3 else []


def _run(artifact: str, sample: Sample, rng) -> Step:
    """A run of `artifact`: on the sample's inputs (mostly), or listing its functions."""
    if rng.random() < 0.2:
        return Step("relaxrun", (artifact, "--list-functions", *sample.run_flags()))
    return Step("relaxrun", (artifact, *_inputs(sample), *_exec_mode(rng)))


def _link(vmo: str, ko: str, sample: Sample, rng) -> Step:
    return Step("relaxld", (vmo, ko, *sample.link_flags, *_exec_mode(rng), "-o", "linked.vmx"))


def _sample_files(sample: Sample) -> dict:
    return {"inputs.npz": sample.files["inputs"], **sample.support_files()}


# ---- sources ---------------------------------------------------------------------------------

def source_case(rng, corpus: Corpus) -> Case:
    if rng.random() < 0.1:
        name = rng.choice(sorted(GENERATORS))
        text, inputs = GENERATORS[name](rng)
        steps = [Step("relaxc", ("case.relax", "-o", "case.vmx")),
                 Step("relaxrun", ("case.vmx", *inputs, *_exec_mode(rng)))]
        return Case("source", f"generated/{name}", {"case.relax": text.encode()}, steps)
    count = rng.choice((1, 1, 1, 2, 3))
    form = rng.choices(("relax", "vms", "vmasm"), weights=(7, 2, 1))[0]
    if form == "relax" and rng.random() < 0.5:
        seed_name, text = rng.choice(corpus.sources)
        sample = next((s for s in corpus.samples if f"samples/{s.name}.relax" == seed_name), None)
    else:
        sample = rng.choice(corpus.samples)
        seed_name, text = f"{sample.name}.{form}", sample.files["source" if form == "relax" else form].decode()
    mutated, label = mutate_source(text, rng, count)
    files = {f"case.{form}": mutated.encode()}
    if form == "relax":
        opt = rng.choice(("-O0", "-O2"))
        flags = sample.link_flags if sample else ()
        steps = [Step("relaxc", (opt, "case.relax", *flags, *_exec_mode(rng), "-o", "case.vmx"))]
        steps.append(_run("case.vmx", sample, rng) if sample else Step("relaxrun", ("case.vmx", "--list-functions")))
        files.update(_sample_files(sample) if sample else {})
    else:
        files.update({"good.ko": sample.files["ko"], **_sample_files(sample)})
        steps = [Step("relaxas", (f"case.{form}", "-o", "case.vmo")), _link("case.vmo", "good.ko", sample, rng),
                 _run("linked.vmx", sample, rng)]
    return Case("source", f"{form}/{seed_name}/{label}", files, steps)


# ---- artifacts -------------------------------------------------------------------------------

def _artifact_steps(kind: str, sample: Sample, rng) -> list[Step]:
    dump = Step("relaxas", ("--dump", rng.choice(("text", "stats", "python")), f"case.{kind}"))
    if kind == "vmx":
        return rng.choice(([dump], [_run("case.vmx", sample, rng)], [_run("case.vmx", sample, rng)]))
    if kind == "ko":
        return [_link("good.vmo", "case.ko", sample, rng), _run("linked.vmx", sample, rng)]
    return rng.choice(([dump], [_link("case.vmo", "good.ko", sample, rng), _run("linked.vmx", sample, rng)],
                       [Step("relaxrun", ("case.vmo", "--list-functions"))]))


def signed_case(rng, sample: Sample, donors: dict) -> Case:
    """A signed .vmx mutated (its signature then stale), run where only its key is trusted; or
    the trusted key's file damaged."""
    key = sample.files["trusted key"]
    if rng.random() < 0.2:
        name = rng.choice(sorted(BYTE_MUTATORS))
        artifact, key, label = sample.files["signed"], BYTE_MUTATORS[name](key, rng), f"key:{name}"
    else:
        artifact, label = mutate_artifact("vmx", sample.files["signed"], rng, donors)
    run = _run("case.vmx", sample, rng)
    steps = [Step(run.tool, (*run.args, "--trust", "key.pem.pub"))]
    files = {"case.vmx": artifact, "key.pem.pub": key, **_sample_files(sample)}
    return Case("artifact", f"signed/{sample.name}/{label}", files, steps)


# The partner files each kind is linked with (a .vmx is run alone).
PARTNERS = {"vmx": (), "ko": ("vmo",), "vmo": ("ko",)}


def artifact_case(rng, corpus: Corpus) -> Case:
    sample = rng.choice(corpus.samples)
    kind = rng.choices(("vmx", "ko", "vmo", "signed"), weights=(5, 4, 2, 2))[0]
    donors = {"ko": corpus.others(sample, "ko")}
    if kind == "signed":
        return signed_case(rng, sample, donors)
    mutated, label = mutate_artifact(kind, sample.files[kind], rng, donors)
    files = {f"case.{kind}": mutated, **{f"good.{other}": sample.files[other] for other in PARTNERS[kind]},
             **_sample_files(sample)}
    return Case("artifact", f"{kind}/{sample.name}/{label}", files, _artifact_steps(kind, sample, rng))


# ---- inputs ----------------------------------------------------------------------------------

def input_case(rng, corpus: Corpus) -> Case:
    sample = rng.choice(corpus.samples)
    files = {"good.vmx": sample.files["vmx"], **sample.support_files()}
    if rng.random() < 0.25:
        arguments, written, label = mutate_inputs(sample.expected, rng, "--expected-output")
        arguments = ["--input", "@inputs.npz", *arguments]
        files["inputs.npz"] = sample.files["inputs"]
        label = "expected/" + label
    else:
        arguments, written, label = mutate_inputs(sample.inputs, rng)
    files.update(written)
    step = Step("relaxrun", ("good.vmx", *arguments, *sample.run_flags(), *_exec_mode(rng)))
    return Case("input", f"{sample.name}/{label}", files, [step])


CATEGORIES = {"source": source_case, "artifact": artifact_case, "input": input_case}
