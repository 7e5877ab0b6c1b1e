"""The host as LLVM sees it, and which entries of a kernel object can run on it.

An entry runs natively when its triple names the host's architecture and
operating system, its CPU is generic, the host's own or an x86-64 level
(cpu_levels.py), and every feature it enables (or its level implies) the host
has. Otherwise bitcode for the same architecture and operating system is
compiled on load; anything else cannot run here.
"""

from __future__ import annotations

import functools

from ...records import record
from ... import llvm_capi
from .cpu_levels import level_features

_OS_NAMES = ("linux", "darwin", "macos", "windows", "freebsd")


def initialize_llvm() -> None:
    """Registers the native target and every target LLVM was built with (once)."""
    llvm_capi.initialize()


@record
class HostInfo:
    triple: str
    cpu: str
    features: str  # "+a,-b,..." as LLVM reports them

    @property
    def enabled_features(self) -> frozenset[str]:
        return frozenset(f[1:] for f in self.features.split(",") if f.startswith("+"))


@functools.cache
def host() -> HostInfo:
    initialize_llvm()
    return HostInfo(llvm_capi.process_triple(), llvm_capi.host_cpu_name(), llvm_capi.host_cpu_features())


def triple_arch(triple: str) -> str:
    arch = triple.split("-")[0]
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(arch, arch)


def triple_os(triple: str) -> str:
    for part in triple.split("-")[1:]:
        for name in _OS_NAMES:
            if part.startswith(name):
                return "darwin" if name == "macos" else name
    return "unknown"


def same_platform(triple: str, other: str) -> bool:
    return triple_arch(triple) == triple_arch(other) and triple_os(triple) == triple_os(other)


def runs_natively(triple: str, cpu: str, features: str, info: HostInfo | None = None) -> bool:
    """Whether code built for (triple, cpu, features) may run on this host as it is."""
    info = info or host()
    if not same_platform(triple, info.triple):
        return False
    wanted = {f.strip()[1:] for f in features.split(",") if f.strip().startswith("+")}
    if cpu not in ("", "generic", info.cpu):
        implied = level_features(cpu) if triple_arch(triple) == "x86_64" else None
        if implied is None:
            return False
        wanted |= implied
    return wanted <= info.enabled_features


def host_machine(opt: int = 3) -> llvm_capi.TargetMachine:
    """A target machine for the host CPU with all its features (for compiling bitcode on load)."""
    info = host()
    return llvm_capi.TargetMachine(info.triple, info.cpu, info.features, opt, "pic", "default")


def host_target_machine(opt: int = 3):
    """host_machine as llvmlite's JIT takes it."""
    import llvmlite.binding as llvm  # the loader's: a build never imports llvmlite.binding

    info = host()
    target = llvm.Target.from_triple(info.triple)
    return target.create_target_machine(cpu=info.cpu, features=info.features, opt=opt, reloc="pic", codemodel="default")
