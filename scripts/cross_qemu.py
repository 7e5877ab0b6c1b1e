"""qemu-user for aarch64: finding or installing it, the CPU it presents, and how a guest runs.

The artifacts are built for `-mcpu=neoverse-v1`. The runtime runs a .ko entry's native object
only when the host's CPU (as LLVM reads it from /proc/cpuinfo) is the entry's CPU; otherwise it
compiles the entry's bitcode for the host on load, and the cross-compiled objects never run.
qemu-user 7.2 passes the x86 host's /proc/cpuinfo through (LLVM then says 'generic') and has no
neoverse-v1 model. So the guest runs on qemu's `max` CPU with the Neoverse V1's 256-bit SVE,
and reads, through QEMU_LD_PREFIX (qemu looks up every absolute path in the sysroot first), a
/proc/cpuinfo as Linux would print it for a Neoverse V1: its identity, and as features the
emulator's own (AT_HWCAP, AT_HWCAP2: a superset of the V1's instruction set).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

from cross_util import CommandFailed, Unavailable, is_root, log, run

QEMU_NAMES = ("qemu-aarch64", "qemu-aarch64-static")
# Debian packages that may ship one of QEMU_NAMES, in order of preference.
QEMU_PACKAGES = ("qemu-user", "qemu-user-static")


@dataclasses.dataclass(frozen=True)
class EmulatedCpu:
    name: str           # LLVM's name for it: what `relaxrun --version` must report in the guest
    qemu_cpu: str       # QEMU_CPU
    implementer: int    # MIDR fields, as /proc/cpuinfo shows them
    variant: int
    part: int
    revision: int


NEOVERSE_V1 = EmulatedCpu("neoverse-v1", "max,sve-default-vector-length=32", 0x41, 0x1, 0xD40, 0x1)

# Linux's names for the AT_HWCAP and AT_HWCAP2 bits (arch/arm64/include/uapi/asm/hwcap.h), as
# /proc/cpuinfo prints them; index = bit.
HWCAP_NAMES = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
    "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg"
).split()
HWCAP2_NAMES = (
    "dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svef32mm svef64mm "
    "svebf16 i8mm bf16 dgh rng bti mte ecv afp rpres mte3 sme smei16i64 smef64f64 smei8i32 "
    "smef16f32 smeb16f32 smef32f32 smefa64"
).split()

# Run in the guest: its AT_HWCAP and AT_HWCAP2 (16 and 26), as qemu sets them.
_HWCAP_PROBE = ("import ctypes; libc = ctypes.CDLL(None); libc.getauxval.restype = ctypes.c_ulong; "
                "print(libc.getauxval(16), libc.getauxval(26))")


def find_qemu() -> str | None:
    for name in QEMU_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def ensure_qemu() -> str:
    """The path of qemu-aarch64, installed with apt-get when missing and we may; else Unavailable."""
    found = find_qemu()
    if found:
        return found
    if not shutil.which("apt-get"):
        raise Unavailable("qemu-aarch64 is not installed and there is no apt-get to install it")
    if not is_root():
        raise Unavailable("qemu-aarch64 is not installed and only root may install it (apt-get install qemu-user)")
    log("installing qemu-user (apt-get)")
    try:
        run(["apt-get", "update"])
    except CommandFailed as failure:
        raise Unavailable(f"apt-get update failed, cannot install qemu-user: {failure}") from None
    tried = []
    for package in QEMU_PACKAGES:
        if not _apt_knows(package):
            continue
        tried.append(package)
        try:
            run(["apt-get", "install", "-y", "--no-install-recommends", package],
                env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        except CommandFailed:
            continue
        found = find_qemu()
        if found:
            return found
    if not tried:
        raise Unavailable(f"apt knows none of {', '.join(QEMU_PACKAGES)}")
    raise Unavailable(f"installing {' or '.join(tried)} gave no {' or '.join(QEMU_NAMES)}")


def _apt_knows(package: str) -> bool:
    try:
        return bool(run(["apt-cache", "show", "--no-all-versions", package]).strip())
    except CommandFailed:
        return False


def qemu_version(qemu: str) -> str:
    first = run([qemu, "--version"]).splitlines()[0]   # "qemu-aarch64 version 7.2.22 (Debian ...)"
    return first.split(" version ")[-1].split()[0]


def guest_env(sysroot: Path, pythonpath: list[Path], cpu: EmulatedCpu = NEOVERSE_V1) -> dict:
    """The environment of a guest Python: the sysroot's loader and libraries, the given path only."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONHOME", "PYTHONEXECUTABLE", "PYTHONSTARTUP", "VIRTUAL_ENV")}
    env.update(QEMU_LD_PREFIX=str(sysroot), QEMU_CPU=cpu.qemu_cpu, PYTHONNOUSERSITE="1",
               PYTHONPATH=os.pathsep.join(str(path) for path in pythonpath))
    return env


def guest_python(qemu: str, sysroot: Path, python_version: str) -> list[str]:
    return [qemu, str(sysroot / "usr" / "bin" / f"python{python_version}")]


def hwcap_names(hwcap: int, hwcap2: int) -> list[str]:
    """The feature names Linux prints for these AT_HWCAP / AT_HWCAP2 values (unknown bits left out)."""
    names = [name for bit, name in enumerate(HWCAP_NAMES) if hwcap >> bit & 1]
    return names + [name for bit, name in enumerate(HWCAP2_NAMES) if hwcap2 >> bit & 1]


def cpuinfo_text(cpu: EmulatedCpu, features: list[str], count: int) -> str:
    """/proc/cpuinfo as Linux prints it on arm64, for `count` identical CPUs."""
    block = (f"BogoMIPS\t: 50.00\nFeatures\t: {' '.join(features)}\n"
             f"CPU implementer\t: {cpu.implementer:#x}\nCPU architecture: 8\nCPU variant\t: {cpu.variant:#x}\n"
             f"CPU part\t: {cpu.part:#05x}\nCPU revision\t: {cpu.revision}\n\n")
    return "".join(f"processor\t: {index}\n{block}" for index in range(count))


def present_cpu(qemu: str, sysroot: Path, python_version: str, cpu: EmulatedCpu = NEOVERSE_V1) -> list[str]:
    """Writes the sysroot's /proc/cpuinfo for `cpu` with the emulator's features; returns them."""
    output = run(guest_python(qemu, sysroot, python_version) + ["-c", _HWCAP_PROBE],
                 env=guest_env(sysroot, [], cpu))
    hwcap, hwcap2 = (int(word) for word in output.split())
    features = hwcap_names(hwcap, hwcap2)
    proc = sysroot / "proc"
    proc.mkdir(exist_ok=True)
    (proc / "cpuinfo").write_text(cpuinfo_text(cpu, features, os.cpu_count() or 1))
    return features
