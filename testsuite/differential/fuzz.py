"""`make fuzz SECONDS=N`: the differential checks on fresh random programs for about N seconds.

    python testsuite/differential/fuzz.py --seconds 300

Runs batches of hypothesis examples with new random seeds (no database, nothing
replayed) until the time is up. Every example goes through `check_program`, every
`--staged-every`-th also through `check_staged`. On a failure hypothesis shrinks
the program (for at most `--shrink-seconds`); the smallest one is saved as a lit
test, found/NAME.relax, with its inputs and expected outputs beside it
(NAME.inputs.npz, NAME.expected.npz), and the command exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import sys
import tempfile
import time
import warnings

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("RELAX_CACHE", "0")

import differential_oracles as oracles  # noqa: E402
from program_gen import programs  # noqa: E402

BATCH = 20  # examples per hypothesis run, each with fresh random seeds
# The kernel builder raises the recursion limit for deep IR; hypothesis says it will not restore it.
warnings.filterwarnings("ignore", message="The recursion limit will not be reset")


class Session:
    """The time limits, how many programs ran, and the failures seen (by program text).

    Past the time limit, programs pass unchecked, so that a running batch ends quickly."""

    def __init__(self, seconds: float, shrink_seconds: float, staged_every: int):
        self.stop_at = time.monotonic() + seconds
        self.shrink_seconds = shrink_seconds
        self.shrink_until: float | None = None
        self.staged_every = staged_every
        self.examples = 0
        self.failures: dict[str, oracles.Mismatch] = {}

    def check(self, program) -> None:
        """The checks, until shrinking has used its time: after that only the programs
        already seen failing fail again, so the shrinker settles on the smallest of them."""
        seen = self.failures.get(program.source)
        if seen is not None:
            raise seen
        deadline = self.stop_at if self.shrink_until is None else self.shrink_until
        if time.monotonic() > deadline:
            return
        self.examples += 1
        try:
            oracles.check_program(program)
            if self.examples % self.staged_every == 0:
                with tempfile.TemporaryDirectory() as directory:
                    oracles.check_staged(program, pathlib.Path(directory))
        except oracles.Mismatch as mismatch:
            self.failures[program.source] = mismatch
            if self.shrink_until is None:
                self.shrink_until = time.monotonic() + self.shrink_seconds
            raise


def run_batch(session: Session) -> oracles.Mismatch | None:
    """One hypothesis run of BATCH fresh examples; the shrunk failure, if any."""

    @settings(max_examples=BATCH, deadline=None, derandomize=False, database=None, verbosity=Verbosity.quiet,
              phases=(Phase.generate, Phase.shrink), report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def fuzz(program):
        session.check(program)

    try:
        fuzz()
    except oracles.Mismatch as mismatch:
        return mismatch
    return None


def expected_outputs(program) -> dict[str, np.ndarray]:
    inputs = program.make_inputs()
    return {f"{i:02d}": array.astype(value.dtype)
            for i, (value, array) in enumerate(zip(program.outputs, program.reference(inputs)))}


def lit_test(program, name: str, mismatch: oracles.Mismatch) -> str:
    """The text of found/NAME.relax: RUN lines that build the program one-shot, at -O0,
    for the baseline CPU (and stage by stage after a staged failure), and check each
    artifact's results."""
    tolerance = max([v.bound.err for v in program.outputs] + [0.0])
    check = (f"relaxrun %t/{{artifact}} {{mode}}--input @%S/{name}.inputs.npz "
             f"--expected-output @%S/{name}.expected.npz --atol {tolerance:.3g} --rtol 0 | FileCheck %s")
    runs = ["rm -rf %t && mkdir -p %t",
            "relaxc %s -o %t/one-shot.vmx",
            check.format(artifact="one-shot.vmx", mode=""),
            check.format(artifact="one-shot.vmx", mode="--exec-mode compiled "),
            "relaxc -O0 %s -o %t/O0.vmx",
            check.format(artifact="O0.vmx", mode=""),
            f'relaxc --target "{oracles.BASELINE_TARGET}" %s -o %t/x86-64.vmx',
            check.format(artifact="x86-64.vmx", mode="")]
    if mismatch.staged:
        # The stages' files are named after the source, as the one-shot build names its own.
        runs += [f"relaxc -S %s -o %t/{name}.vms", f"relaxas %t/{name}.vms -o %t/{name}.vmo",
                 f"relaxc --emit kernels %t/{name}.vms -o %t/{name}.ko",
                 f"relaxld %t/{name}.vmo %t/{name}.ko -o %t/staged.vmx", "cmp %t/one-shot.vmx %t/staged.vmx"]
    summary = [f"# {line}" for line in mismatch.failures[0].splitlines()[:3]]
    header = ["# Found by `make fuzz` (testsuite/differential/fuzz.py): a program that every build",
              "# should compute within the tolerance of numpy's float64 results (beside this file).",
              "# First disagreement:", *summary]
    return "\n".join(header + [f"# RUN: {line}" for line in runs] + ["# CHECK: [SUCCESS]", "", program.source])


def save(program, mismatch: oracles.Mismatch, directory: pathlib.Path) -> pathlib.Path:
    """Writes the reproducer (the .relax lit test, its inputs and expected outputs)."""
    name = "fuzz-" + hashlib.sha1(program.source.encode()).hexdigest()[:10]
    directory.mkdir(parents=True, exist_ok=True)
    inputs = dict(zip((i.value.name for i in program.inputs), program.make_inputs()))
    np.savez(directory / f"{name}.inputs.npz", **inputs)
    np.savez(directory / f"{name}.expected.npz", **expected_outputs(program))
    path = directory / f"{name}.relax"
    path.write_text(lit_test(program, name, mismatch))
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to generate programs")
    parser.add_argument("--shrink-seconds", type=float, default=180.0, help="how long to shrink a failure")
    parser.add_argument("--staged-every", type=int, default=10, help="check every Nth program staged too")
    parser.add_argument("--found", type=pathlib.Path, default=HERE / "found", help="where reproducers go")
    args = parser.parse_args(argv)
    session = Session(args.seconds, args.shrink_seconds, args.staged_every)
    while time.monotonic() < session.stop_at:
        mismatch = run_batch(session)
        if mismatch is not None:
            path = save(mismatch.program, mismatch, args.found)
            print(f"{mismatch}\nfuzz: after {session.examples} programs, saved the failing one as {path}")
            return 1
    print(f"fuzz: {session.examples} programs, no disagreement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
