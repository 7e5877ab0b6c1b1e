"""Target machines for code generation: triple, CPU and features from a Target.

A Target without -mtriple means this host with its own CPU and features (as
`-mcpu=native` would); with a triple and no -mcpu, the generic CPU of that
architecture. Objects are position independent so that they can be loaded by
the JIT or linked into a shared library alike.
"""

from __future__ import annotations

from ..diagnostics import UserError
from ..records import record
from ..runtime.kernels.host import host, triple_arch, triple_os
from ..llvm_capi import TargetMachine


# What an operating system's ABI implies when a target names no features: Linux on
# RISC-V is RV64GC with hard-float doubles (lp64d), as distributions build it.
DEFAULT_FEATURES = {"riscv64": "+m,+a,+f,+d,+c", "riscv32": "+m,+a,+f,+d,+c"}
DEFAULT_ABI = {"riscv64": "lp64d", "riscv32": "ilp32d"}


@record
class TargetSpec:
    triple: str
    cpu: str
    features: str
    opt_level: int = 3
    fast_math: bool = False

    @property
    def object_format(self) -> str:
        system = triple_os(self.triple)
        return {"darwin": "macho", "windows": "coff"}.get(system, "elf")

    def describe(self) -> str:
        return f"llvm -mtriple={self.triple}" + (f" -mcpu={self.cpu}" if self.cpu else "")


def target_spec(target) -> TargetSpec:
    """The TargetSpec of a relax Target (None means the host)."""
    if target is None:
        info = host()
        return TargetSpec(info.triple, info.cpu, info.features)
    if isinstance(target, TargetSpec):
        return target
    if isinstance(target, str):
        from . import Target

        target = Target.parse(target)
    kind = getattr(target, "kind", "llvm")
    if kind != "llvm":
        raise UserError(f"codegen: CPU kernels need an 'llvm' target, not '{kind}'")
    triple = getattr(target, "mtriple", "") or ""
    cpu = getattr(target, "mcpu", "") or ""
    mattr = getattr(target, "mattr", ()) or ()
    features = mattr if isinstance(mattr, str) else ",".join(mattr)
    opt_level = getattr(target, "opt_level", 3)
    fast_math = bool(getattr(target, "fast_math", False))
    if not triple:
        info = host()
        triple = info.triple
        if not cpu:
            cpu, features = info.cpu, ",".join(filter(None, [info.features, features]))
    if not features:
        features = DEFAULT_FEATURES.get(triple_arch(triple), "")
    return TargetSpec(triple, cpu or "generic", features, opt_level if opt_level is not None else 3, fast_math)


def target_machine(spec: TargetSpec, opt: int | None = None) -> TargetMachine:
    level = spec.opt_level if opt is None else opt
    try:
        return TargetMachine(spec.triple, spec.cpu, spec.features, min(max(level, 0), 3), "pic", "default",
                             DEFAULT_ABI.get(triple_arch(spec.triple), ""))
    except LookupError as exc:
        raise UserError(f"codegen: LLVM cannot generate code for '{spec.triple}': {exc}") from None
