"""`make fuzz SECONDS=N`: the tools on mutated sources, artifacts and inputs, for about N seconds.

    python testsuite/robustness/fuzz_robustness.py --seconds 120 [--seed 7] [-v]
    python testsuite/robustness/fuzz_robustness.py --seed 7 --case 41     # one case again

Case after case, by turns a source, an artifact and an input case (fuzz_cases.py),
each made from (seed, case number, samples) alone for a given toolchain: a mutated file in a fresh directory and
the real tools run on it, each in a process of its own (fuzz_process.py). A case
fails on exit 70, a Python traceback, a signal or a hang. The first case of each
kind of failure is rerun through the installed tools, then saved under --findings
(default build/fuzz-findings/) with its files, the commands (reproduce.sh) and what
the failing tool printed. At the end a table counts the cases per category and
outcome; the command exits 1 when anything failed.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import re
import shutil
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# Before numpy loads: its BLAS would start threads, and the fork runner forks this process.
os.environ["OPENBLAS_NUM_THREADS"] = "1"

from fuzz_cases import CATEGORIES, Case  # noqa: E402
from fuzz_corpus import REPO, CorpusError, build_corpus, sample_names  # noqa: E402
from fuzz_process import FAILING, OUTCOMES, Outcome, Runner  # noqa: E402
from fuzz_reduce import reduce_source, text_file  # noqa: E402


def case_at(seed: int, number: int, corpus) -> Case:
    rng = random.Random(f"{seed}:{number}")
    categories = list(CATEGORIES)
    return CATEGORIES[categories[number % len(categories)]](rng, corpus)


def write_case(case: Case, directory: pathlib.Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    for name, data in case.files.items():
        (directory / name).write_bytes(data)


def run_case(case: Case, runner: Runner, directory: pathlib.Path) -> tuple[int, Outcome]:
    """(index of the last step run, its outcome): the chain stops at the first step that
    does not exit 0."""
    write_case(case, directory)
    for index, step in enumerate(case.steps):
        outcome = runner.run(step, str(directory), f"step{index}")
        if outcome.kind != "ok":
            return index, outcome
    return index, outcome


def signature(case: Case, step_index: int, outcome: Outcome) -> str:
    """What makes two failures the same: category, tool, outcome, and the message with its
    numbers, quoted names and paths taken out."""
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    if outcome.kind == "traceback":
        message = lines[-1] if lines else ""
    elif outcome.kind == "internal":
        message = next((line for line in lines if "internal error" in line), lines[-1] if lines else "")
    else:
        message = ""
    message = re.sub(r"'[^']*'|\"[^\"]*\"|\d+|/\S+", "_", message.partition("internal error: ")[2] or message)
    message = " ".join(message.split()[:5])  # the exception's type and the start of its message
    return f"{case.category} {case.steps[step_index].tool} {outcome.describe() if outcome.kind == 'signal' else outcome.kind}: {message}"


class Findings:
    """The failures seen, by signature; the first of each saved with a reproducer (a source
    case shrunk first, fuzz_reduce.py), and rerun through the installed tools."""

    def __init__(self, args, runner: Runner, confirm: Runner | None):
        self.directory = args.findings
        self.seed = args.seed
        # What names a case: the seed, the case number and the samples it was drawn from.
        self.replay = f"--seed {args.seed}" + (f" --samples {args.samples}" if args.samples else "")
        self.runner, self.confirm = runner, confirm
        self.reduce_seconds = args.reduce_seconds
        self.scratch = args.work / "reduce"
        self.seen: dict[str, list[int]] = {}

    def add(self, number: int, case: Case, step_index: int, outcome: Outcome) -> None:
        key = signature(case, step_index, outcome)
        first = key not in self.seen
        self.seen.setdefault(key, []).append(number)
        if not first:
            return
        message = next((line for line in outcome.stderr.splitlines() if "error" in line.lower()), "")
        print(f"fuzz: FINDING case {number} ({self.replay} --case {number}), {case.category} {case.label}:"
              f" `{case.steps[step_index].shell()}` {outcome.describe()}: {message[:200]}", flush=True)
        case, outcome = self._reduced(case, key, outcome)
        saved = self.directory / f"seed{self.seed}-case{number}-{case.category}-{outcome.kind}"
        write_case(case, saved)
        (saved / "stderr.txt").write_text(outcome.stderr)
        (saved / "reproduce.sh").write_text(self._script(number, case, step_index, outcome))
        if self.confirm is not None:
            again = run_case(case, self.confirm, saved / "rerun")
            verdict = "reproduced" if again[1].kind == outcome.kind else f"not reproduced ({again[1].describe()})"
            print(f"fuzz:   rerun through the installed tools: {verdict}; saved in {saved}", flush=True)
            shutil.rmtree(saved / "rerun", ignore_errors=True)

    def _reduced(self, case: Case, key: str, outcome: Outcome) -> tuple[Case, Outcome]:
        name = text_file(case)
        if name is None or self.reduce_seconds <= 0:
            return case, outcome

        def still_fails(candidate: Case) -> bool:
            index, result = run_case(candidate, self.runner, self.scratch)
            return result.failed and signature(candidate, index, result) == key

        case, dropped = reduce_source(case, name, still_fails, self.reduce_seconds)
        if dropped:
            outcome = run_case(case, self.runner, self.scratch)[1]
            print(f"fuzz:   shrunk: {dropped} lines of {name} dropped", flush=True)
        return case, outcome

    def _script(self, number: int, case: Case, step_index: int, outcome: Outcome) -> str:
        commands = " &&\n".join(step.shell() for step in case.steps[:step_index + 1])
        return (f"#!/bin/sh\n# robustness fuzz finding: case {number} of seed {self.seed}, {case.category} "
                f"{case.label}\n# the last command ends with {outcome.describe()} ({outcome.kind}); again with:\n"
                f"#   python testsuite/robustness/fuzz_robustness.py {self.replay} --case {number}\n"
                f"cd \"$(dirname \"$0\")\"\n{commands}\n")


def summary(counts: dict, findings: Findings, cases: int, seconds: float) -> str:
    columns = [kind for kind in OUTCOMES if any(counts[c].get(kind) for c in counts) or kind in FAILING]
    lines = [f"fuzz: seed {findings.seed}, {cases} cases in {seconds:.0f} s",
             f"{'category':<10}{'cases':>7}" + "".join(f"{kind:>11}" for kind in columns)]
    for category, row in counts.items():
        lines.append(f"{category:<10}{sum(row.values()):>7}" + "".join(f"{row.get(kind, 0):>11}" for kind in columns))
    failures = sum(len(numbers) for numbers in findings.seen.values())
    lines.append(f"fuzz: {len(findings.seen)} distinct failures in {failures} cases"
                 + (f", saved under {findings.directory}" if findings.seen else ""))
    for key, numbers in findings.seen.items():
        lines.append(f"  {len(numbers):>4} x {key}  (first: --case {numbers[0]})")
    return "\n".join(lines)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=None,
                        help="stop starting cases after this long (default 60, or no limit with --cases)")
    parser.add_argument("--cases", type=int, default=None, help="stop after this many cases")
    parser.add_argument("--seed", type=int, default=None, help="the run's seed (default: a new one, printed)")
    parser.add_argument("--case", type=int, default=None, help="run this one case of the seed, and say what it is")
    parser.add_argument("--samples", default=None, help="comma-separated samples to mutate (default: all)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before a tool run counts as a hang")
    parser.add_argument("--memory-mb", type=int, default=4096, help="address-space limit of each tool run")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case and its outcome")
    parser.add_argument("--runner", choices=("fork", "exec"), default="fork")
    parser.add_argument("--reduce-seconds", type=float, default=15.0, help="time to shrink each failing source")
    parser.add_argument("--no-confirm", action="store_true", help="do not rerun findings through the installed tools")
    parser.add_argument("--work", type=pathlib.Path, default=REPO / "build" / "fuzz", help="corpus and scratch space")
    parser.add_argument("--findings", type=pathlib.Path, default=REPO / "build" / "fuzz-findings")
    return parser.parse_args(argv)


def case_numbers(args):
    """The cases to run: the one of --case, or 0, 1, 2, ... until --cases or --seconds."""
    if args.case is not None:
        yield args.case
        return
    seconds = args.seconds if args.seconds is not None else float("inf") if args.cases is not None else 60.0
    started, number = time.monotonic(), 0
    while time.monotonic() - started < seconds and (args.cases is None or number < args.cases):
        yield number
        number += 1


def main(argv=None) -> int:
    args = parse_arguments(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    print(f"fuzz: seed {args.seed}", flush=True)
    env = {key: value for key, value in os.environ.items() if key not in ("RELAX_TRACEBACK", "PYTHONWARNINGS")}
    env.update(RELAX_CACHE_DIR=str(args.work / "kernel-cache"), COLUMNS="200", OPENBLAS_NUM_THREADS="1")
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    runner = Runner(args.runner, args.timeout, args.memory_mb, env)
    names = args.samples.split(",") if args.samples else sample_names()
    try:
        corpus = build_corpus(runner, args.work / "corpus", names)
    except CorpusError as error:  # a sample that does not build: a failure before any mutation
        print(f"fuzz: {error}")
        return 1
    confirm = None if args.no_confirm or args.runner == "exec" else Runner("exec", args.timeout, args.memory_mb, env)
    findings = Findings(args, runner, confirm)
    counts = {category: {} for category in CATEGORIES}
    started = time.monotonic()
    for number in case_numbers(args):
        case = case_at(args.seed, number, corpus)
        step_index, outcome = run_case(case, runner, args.work / "case")
        counts[case.category][outcome.kind] = counts[case.category].get(outcome.kind, 0) + 1
        if args.verbose or args.case is not None:
            first = next((line for line in outcome.stderr.splitlines() if line.strip()), "")
            print(f"fuzz: {number:5d} {case.category:<8} {outcome.kind:<9} {outcome.seconds:5.1f}s {case.label[:150]}"
                  + (f"\n         {case.steps[step_index].tool}: {first[:200]}" if first else ""), flush=True)
        if outcome.failed:
            findings.add(number, case, step_index, outcome)
    print(summary(counts, findings, sum(sum(row.values()) for row in counts.values()), time.monotonic() - started))
    return 1 if findings.seen else 0


if __name__ == "__main__":
    sys.exit(main())
