"""The header and summary lines of bench/peers.py."""

from __future__ import annotations

import math
import pathlib
import platform

# The workloads whose latency the issue-18 target averages (chain200 is dispatch cost).
COMPUTE_WORKLOADS = ("mlp_b1", "mlp_b64", "cnn", "transformer", "vadd16m", "matmul1024")


def cpu_name() -> str:
    try:
        lines = pathlib.Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:  # not Linux, or no /proc
        lines = []
    for line in lines:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def ratio_lines(medians: dict[str, dict[str, float]], peer: str = "onnxruntime") -> list[str]:
    """`# relax / PEER: ...` with the geometric mean over the compute workloads measured, one
    line per relax row (`relax`, or `relax-interp` and `relax-compiled` with --exec-mode both:
    the default path runs compiled, docs/vm.md); none for a row no workload had with PEER."""
    labels = dict.fromkeys(label for by_peer in medians.values() for label in by_peer if label.startswith("relax"))
    return [line for line in (_ratio_line(medians, label, peer) for label in labels) if line is not None]


def _ratio_line(medians: dict[str, dict[str, float]], relax: str, peer: str) -> str | None:
    ratios = {name: by_peer[relax] / by_peer[peer] for name, by_peer in medians.items()
              if name in COMPUTE_WORKLOADS and by_peer.get(relax) and by_peer.get(peer)}
    if not ratios:
        return None
    mean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    every = "" if len(ratios) == len(COMPUTE_WORKLOADS) else f", {len(ratios)} of {len(COMPUTE_WORKLOADS)} workloads"
    return (f"# {relax} / {peer} (medians of this run): " + ", ".join(f"{n} {r:.2f}" for n, r in ratios.items())
            + f"; geometric mean {mean:.3f}{every}")
