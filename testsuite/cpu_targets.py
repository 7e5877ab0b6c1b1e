"""The CPU targets kernel tests run at: every x86-64 level this host can run, and the host's own CPU.

    @pytest.mark.parametrize("target", CPU_TARGETS)
    def test_something(target): build(mod, target) ...

The schedules size their tiles by the target (tir/schedule/cpu.py), so one host runs
the baseline (SSE2), v2, v3 (AVX2) and, where it has AVX-512, v4 schedules and code:
a schedule that is wrong on a CPU nobody tested on fails here on any x86-64 machine.
A level the host cannot run is skipped with the features it lacks; on a host of
another architecture the x86-64 levels are skipped and `native` still runs.
"""

from __future__ import annotations

import pytest

from relax.runtime.kernels.cpu_levels import X86_64_LEVELS
from relax.runtime.kernels.host import host, triple_arch

NATIVE = "llvm -mcpu=native"


def _missing(level: str) -> str | None:
    """Why this host cannot run code for `level`, or None when it can."""
    info = host()
    if triple_arch(info.triple) != "x86_64":
        return f"{level} is an x86-64 level; this host is {info.triple}"
    lacking = sorted(X86_64_LEVELS[level] - info.enabled_features)
    return f"this host ({info.cpu}) lacks {', '.join(lacking)} for {level}" if lacking else None


def _param(level: str):
    reason = _missing(level)
    marks = [pytest.mark.skip(reason=reason)] if reason else []
    return pytest.param(f"llvm -mcpu={level}", id=level, marks=marks)


CPU_TARGETS = [_param(level) for level in X86_64_LEVELS] + [pytest.param(NATIVE, id="native")]


def _schedule_model(target: str):
    """What the CPU schedules size their tiles by for `target`: its CPU model (tir/schedule/cpu.py)
    without the cache sizes, which only change the blocking (test_register_tile_paths.py crosses
    every block boundary on its own), so that the host's own CPU adds no run where it has the
    registers of a level."""
    import dataclasses

    from relax.target import Target
    from relax.tir.schedule.cpu import cpu_info

    return dataclasses.replace(cpu_info(Target.parse(target)), l1d_bytes=0, l2_bytes=0, l3_bytes=0)


def _distinct_models(params) -> list:
    seen, kept = set(), []
    for param in params:
        if param.marks:  # skipped on this host: it stands for no model here
            kept.append(param)
            continue
        model = _schedule_model(param.values[0])
        if model not in seen:
            seen.add(model)
            kept.append(param)
    return kept


SCHEDULE_TARGETS = _distinct_models(CPU_TARGETS)
