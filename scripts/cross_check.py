#!/usr/bin/env python3
"""make cross-check: artifacts cross-compiled here for aarch64 run on aarch64 (qemu-user).

    python scripts/cross_check.py [--refresh] [--jobs N]      (with the venv's Python)

1. qemu-aarch64: found on PATH, else installed with apt-get (as root).
2. An aarch64 sysroot under build/cross/aarch64/: Debian's arm64 Python and libraries, and the
   aarch64 wheels of the venv's numpy, llvmlite, click, rich ... (cached; cross_sysroot.py).
3. With the host's relaxc: samples for `llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1`, and a
   fat artifact for x86-64 and that aarch64 target.
4. Each runs with relaxrun in the emulated aarch64 Python (the fat one on this host too) and its
   outputs are compared with samples/data/NAME.expected.npz.
5. Remote: `relaxrun --serve` runs in the emulated aarch64 Python and the host's relaxrun
   --remote runs the aarch64 mlp artifact on it (upload, load, run there; compare here).
6. riscv64: one sample is built and its target checked, not run (PyPI has no riscv64 llvmlite).

Exit status: 0 when everything ran and matched, or when qemu or the packages cannot be had here
(a line 'cross-check: skipped: <why>' says so); 1 on any failure or mismatch.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from cross_qemu import NEOVERSE_V1, ensure_qemu, guest_env, guest_python, present_cpu, qemu_version
from cross_sysroot import ensure_sysroot, python_version
from cross_remote import remote_run, write_key
from cross_util import CommandFailed, Unavailable, log, run, tail

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
BUILD = REPO / "build" / "cross"

AARCH64 = f"llvm -mtriple=aarch64-linux-gnu -mcpu={NEOVERSE_V1.name}"
X86_64 = "llvm -mtriple=x86_64-linux-gnu"
RISCV64 = "llvm -mtriple=riscv64-linux-gnu"
# samples/Makefile's tolerances (ATOL, RTOL)
TOLERANCE = ["--atol", "1e-5", "--rtol", "1e-4"]
RUN_TIMEOUT_S = 600   # an emulated run takes seconds to tens of seconds


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    sample: str
    targets: tuple[str, ...]
    on_host: bool = False   # also run natively (the fat artifact)

    @property
    def artifact(self) -> Path:
        return BUILD / "artifacts" / f"{self.name}.vmx"


CASES = (
    Case("mlp-aarch64", "mlp", (AARCH64,)),                      # dense layers
    Case("transformer-aarch64", "transformer", (AARCH64,)),      # attention, softmax, layer norm
    Case("dynamic_batch-aarch64", "dynamic_batch", (AARCH64,)),  # symbolic shapes, shape functions
    Case("cnn-fat", "cnn", (X86_64, AARCH64), on_host=True),     # one artifact, both machines
)
RISCV_CASE = Case("mlp-riscv64", "mlp", (RISCV64,))
REMOTE_CASE = CASES[0]  # also run from this host on an aarch64 relaxrun --serve


@dataclasses.dataclass(frozen=True)
class Result:
    case: Case
    where: str          # "aarch64 (qemu)" or "x86_64 (host)"
    ok: bool
    status: str
    seconds: float
    output: str = ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--refresh", action="store_true", help="rebuild the cached sysroot")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="emulated runs at once")
    args = parser.parse_args(argv)
    if platform.machine() not in ("x86_64", "AMD64"):
        log(f"skipped: the host is {platform.machine()}, the check cross-runs from x86-64")
        return 0
    start = time.monotonic()
    try:
        qemu = ensure_qemu()
        sysroot, site = ensure_sysroot(BUILD / "aarch64", refresh=args.refresh)
        log(f"qemu-aarch64 {qemu_version(qemu)} ({qemu}); set-up {time.monotonic() - start:.1f} s")
        ok = check(qemu, sysroot, site, args.jobs)
    except Unavailable as why:
        log(f"skipped: {why}")
        return 0
    except CommandFailed as failure:
        log(f"FAILED: {failure}")
        ok = False
    log(f"{'ok' if ok else 'FAILED'}; total {time.monotonic() - start:.1f} s")
    return 0 if ok else 1


def check(qemu: str, sysroot: Path, site: Path, jobs: int) -> bool:
    """Builds every case, runs them, reports; whether all ran and matched."""
    if not guest_sees_target_cpu(qemu, sysroot, site):
        return False
    start = time.monotonic()
    builds = {case: build(case) for case in (*CASES, RISCV_CASE)}
    log(f"built {len(builds)} artifacts with the host's relaxc in {time.monotonic() - start:.1f} s")

    results = [Result(case, "host relaxc", False, "BUILD FAILED", 0.0, output)
               for case, output in builds.items() if output is not None and case in CASES]
    results += run_all([case for case in CASES if builds[case] is None], qemu, sysroot, site, jobs)
    if builds[REMOTE_CASE] is None:
        results.append(run_remote_case(REMOTE_CASE, qemu, sysroot, site))
    for result in results:
        report(result)
    riscv_ok = check_riscv(builds[RISCV_CASE])
    passed = sum(result.ok for result in results)
    log(f"{passed} of {len(results)} runs match their expected outputs; riscv64 "
        f"{'built' if riscv_ok else 'build FAILED'}")
    return passed == len(results) and riscv_ok


def guest_sees_target_cpu(qemu: str, sysroot: Path, site: Path) -> bool:
    """Presents the emulated CPU, and whether the guest's runtime sees it as NEOVERSE_V1: it runs
    the cross-compiled objects only then (else it compiles their bitcode for the CPU it sees)."""
    features = present_cpu(qemu, sysroot, python_version(), NEOVERSE_V1)
    version = run(guest_relaxrun(qemu, sysroot) + ["--version"], env=guest_env(sysroot, pythonpath(site)))
    host = next((line for line in version.splitlines() if line.startswith("host:")), "host: ?")
    log(f"guest: QEMU_CPU={NEOVERSE_V1.qemu_cpu} shown as {NEOVERSE_V1.name} ({len(features)} features); "
        f"relaxrun --version in the guest: {host}")
    if host.endswith(f"cpu {NEOVERSE_V1.name}"):
        return True
    log(f"FAILED: the guest's runtime does not see a {NEOVERSE_V1.name}, so the cross-compiled objects "
        f"would not be what runs\n{version}")
    return False


# Building on the host --------------------------------------------------------------------------


def build(case: Case) -> str | None:
    """Builds the case's artifact with the host's relaxc; None, or what the failed build said."""
    command = [sys.executable, "-m", "relaxc", str(SAMPLES / f"{case.sample}.relax"), "-o", str(case.artifact)]
    for target in case.targets:
        command += ["--target", target]
    case.artifact.parent.mkdir(parents=True, exist_ok=True)
    case.artifact.unlink(missing_ok=True)
    try:
        run(command, cwd=str(REPO))
    except CommandFailed as failure:
        return str(failure)
    return None


# Running ---------------------------------------------------------------------------------------


def pythonpath(site: Path) -> list[Path]:
    """The runtime's sources (lib/ for relax, the root for the relaxrun package), then the wheels."""
    return [REPO / "lib", REPO, site]


def guest_relaxrun(qemu: str, sysroot: Path) -> list[str]:
    return guest_python(qemu, sysroot, python_version()) + ["-m", "relaxrun"]


def relaxrun_arguments(case: Case) -> list[str]:
    data = SAMPLES / "data"
    return [str(case.artifact), "--input", f"@{data / case.sample}.inputs.npz",
            "--expected-output", f"@{data / case.sample}.expected.npz", *TOLERANCE]


def run_all(cases: list[Case], qemu: str, sysroot: Path, site: Path, jobs: int) -> list[Result]:
    """The emulated runs, `jobs` at a time (each is mostly one thread), then the native ones."""
    env = guest_env(sysroot, pythonpath(site))
    emulated = [(case, "aarch64 (qemu)", guest_relaxrun(qemu, sysroot), env) for case in cases]
    native = [(case, "x86_64 (host)", [sys.executable, "-m", "relaxrun"], None) for case in cases if case.on_host]
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        results = list(pool.map(lambda job: run_case(*job), emulated))
    return results + [run_case(*job) for job in native]


def run_case(case: Case, where: str, relaxrun: list[str], env: dict | None) -> Result:
    start = time.monotonic()
    try:
        result = subprocess.run(relaxrun + relaxrun_arguments(case), env=env, cwd=str(REPO), text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout or ""
        output = output.decode(errors="replace") if isinstance(output, bytes) else output
        return Result(case, where, False, f"TIMED OUT after {RUN_TIMEOUT_S} s", time.monotonic() - start, output)
    seconds = time.monotonic() - start
    # relaxrun: 0 success ([SUCCESS]), 3 outputs differ, anything else an error
    ok = result.returncode == 0 and "[SUCCESS]" in result.stdout
    status = {0: "ok" if ok else "NO COMPARISON", 3: "MISMATCH"}.get(result.returncode,
                                                                      f"FAILED (exit {result.returncode})")
    return Result(case, where, ok, status, seconds, result.stdout)


def run_remote_case(case: Case, qemu: str, sysroot: Path, site: Path) -> Result:
    """The case run by the host's relaxrun --remote on an emulated aarch64 relaxrun --serve."""
    start = time.monotonic()
    ok, status, output = remote_run(guest_relaxrun(qemu, sysroot), guest_env(sysroot, pythonpath(site)),
                                    [sys.executable, "-m", "relaxrun"], relaxrun_arguments(case),
                                    write_key(BUILD / "remote.key"), cwd=str(REPO))
    return Result(case, "aarch64 server (qemu), x86_64 client", ok, status, time.monotonic() - start, output)


def report(result: Result) -> None:
    log(f"{result.case.name:<22} {result.where:<15} {result.status:<12} {result.seconds:6.1f} s")
    if not result.ok:
        print(tail(result.output, 40), flush=True)


def check_riscv(build_output: str | None) -> bool:
    """The riscv64 artifact exists and names its target; it is not run (no riscv64 llvmlite wheel)."""
    case = RISCV_CASE
    if build_output is not None or not case.artifact.is_file():
        log(f"{case.name:<22} {'riscv64':<15} BUILD FAILED\n{tail(build_output or 'no artifact', 40)}")
        return False
    stats = run([sys.executable, "-m", "relaxas", "--dump", "stats", str(case.artifact)], cwd=str(REPO))
    targets = [line.strip() for line in stats.splitlines() if "riscv64" in line]
    if not targets:
        log(f"{case.name:<22} {'riscv64':<15} FAILED: relaxas --dump stats lists no riscv64 target\n{stats}")
        return False
    log(f"{case.name:<22} {'riscv64':<15} built, not run (PyPI has no riscv64 llvmlite wheel): {targets[0]}")
    return True


if __name__ == "__main__":
    sys.exit(main())
