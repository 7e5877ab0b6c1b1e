"""What LLVM (llvmlite's library, through relax/llvm_capi.py) knows about triples, CPUs and features.

Validation asks LLVM directly: a triple is known when LLVM finds a backend for it; a
CPU or feature is known when creating a target machine with it prints no
"is not a recognized processor/feature" warning (LLVM writes those to the process's
standard error, so we capture file descriptor 2 around the call).

The lists of valid CPUs and features (for error messages and `--list-targets`) come
from LLVM's own `-mcpu=help` table. LLVM prints that table only once per process, so
it is read in a short child process (this module run with `python -m`, the triple as
its argument) and cached per triple.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from functools import lru_cache

from .. import llvm_capi

_LOCK = threading.Lock()

# Architectures to try when listing the backends of this LLVM build: llvmlite has no
# registry iterator, so we ask `from_triple` about each of these names.
CANDIDATE_ARCHES = (
    "x86_64", "i686", "aarch64", "aarch64_be", "arm", "armv7", "thumbv7", "riscv32",
    "riscv64", "nvptx64", "amdgcn", "wasm32", "wasm64", "powerpc64le", "powerpc64",
    "mips", "mips64", "s390x", "loongarch64", "sparcv9", "hexagon", "bpf", "avr",
    "msp430", "lanai", "ve", "xcore",
)


def llvm_version() -> str:
    return ".".join(str(part) for part in llvm_capi.llvm_version())


def host_triple() -> str:
    return llvm_capi.process_triple()


def host_cpu() -> str:
    return llvm_capi.host_cpu_name()


def host_features() -> tuple[str, ...]:
    """This host's CPU features as LLVM spells them, `+f` or `-f`, sorted by name (as
    llvm_capi.host_cpu_features gives them)."""
    return tuple(f for f in llvm_capi.host_cpu_features().split(",") if f)


def triple_arch(triple: str) -> str:
    return triple.split("-", 1)[0]


@lru_cache(maxsize=None)
def is_known_triple(triple: str) -> bool:
    return llvm_capi.known_target(triple)


@lru_cache(maxsize=None)
def known_arches() -> tuple[str, ...]:
    """The architectures this LLVM build can generate code for."""
    return tuple(a for a in CANDIDATE_ARCHES if is_known_triple(f"{a}-unknown-linux-gnu"))


def _capture_stderr(function):
    """Runs `function()` with file descriptor 2 redirected; returns (result, text)."""
    import tempfile  # here: only a CPU or feature other than the host's is checked this way

    with _LOCK, tempfile.TemporaryFile() as sink:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):  # no standard error to borrow: LLVM's words are lost
            return function(), ""
        os.dup2(sink.fileno(), 2)
        try:
            result = function()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        return result, sink.read().decode("utf-8", "replace")


@lru_cache(maxsize=None)
def rejected(triple: str, cpu: str, features: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(unknown CPUs, unknown features) among `cpu` and `features` for `triple`."""
    if (triple, cpu, features) == (host_triple(), host_cpu(), host_features()):
        return (), ()  # LLVM's own description of this host
    _, text = _capture_stderr(lambda: llvm_capi.TargetMachine(triple, cpu, ",".join(features)))
    bad_cpus, bad_features = [], []
    for line in text.splitlines():
        if "is not a recognized processor" in line:
            name = line.split("'")[1]
            if name not in bad_cpus:
                bad_cpus.append(name)
        elif "is not a recognized feature" in line:
            name = line.split("'")[1]
            if name not in bad_features:
                bad_features.append(name)
    return tuple(bad_cpus), tuple(bad_features)


def _parse_help(text: str) -> dict[str, list[str]]:
    tables = {"cpus": [], "features": []}
    current = None
    for line in text.splitlines():
        if line.startswith("Available CPUs"):
            current = "cpus"
        elif line.startswith("Available features"):
            current = "features"
        elif current and line.startswith("  ") and not line.startswith("   ") and " - " in line:
            tables[current].append(line.split()[0])
    return tables


@lru_cache(maxsize=None)
def processor_tables(triple: str) -> dict[str, tuple[str, ...]]:
    """{"cpus": (...), "features": (...)} that LLVM knows for `triple` (empty if unknown)."""
    if not is_known_triple(triple):
        return {"cpus": (), "features": ()}
    import subprocess  # here, not at the top: only an error message or a listing needs the tables

    try:
        done = subprocess.run(
            [sys.executable, "-m", __spec__.name, triple],
            capture_output=True, text=True, timeout=60, check=True,
        )
        tables = json.loads(done.stdout)
    except (subprocess.SubprocessError, OSError, ValueError):
        return {"cpus": (), "features": ()}
    return {key: tuple(values) for key, values in tables.items()}


def _print_help_tables(triple: str) -> None:
    _, text = _capture_stderr(lambda: llvm_capi.TargetMachine(triple, "help", "+help"))
    print(json.dumps(_parse_help(text)))


if __name__ == "__main__":
    _print_help_tables(sys.argv[1])
