"""bench/packed_weights.py packs the weights for the CPU it builds the kernels for: lowered
without a target, its "packed at build" side read the generic target's 8-column panels
with AVX-512 kernels and ran up to twice as slow as packing per call."""

import pathlib

import numpy as np
import pytest

from relax.ir import expr as rx
from relax.ir.visitor import pre_order
from relax.target import parse_target
from relax.tir.schedule.cpu import cpu_info
from relax.tir.schedule.packed_weights import panel_width

from cpu_targets import SCHEDULE_TARGETS

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT.parent / "shared" / "bench"
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="shared/bench is not beside the checkout")


def _packed_widths(mod) -> set[int]:
    constants = [node.data for func in mod.relax_functions().values()
                 for node in pre_order(func) if isinstance(node, rx.Constant)]
    return {np.asarray(data).shape[-1] for data in constants if np.asarray(data).ndim == 3}


@pytest.mark.parametrize("target", SCHEDULE_TARGETS)
def test_mlp_weights_are_packed_for_the_benchmarks_target(target, bench_script):
    packed_weights = bench_script("packed_weights")

    modules, _ = packed_weights.lower_both("mlp_b64", parse_target(target))
    assert _packed_widths(modules["packed at build"]) == {panel_width(cpu_info(target))}
    assert _packed_widths(modules["packed per call"]) == set()
