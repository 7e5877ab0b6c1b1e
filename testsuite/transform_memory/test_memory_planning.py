"""StaticPlanBlockMemory and KillAfterLastUse on real models: how many storages a
call allocates and how many bytes, against the same pipeline without planning,
and the outputs unchanged (numpy and the samples' expected outputs are the oracle)."""

import pathlib
import weakref

import numpy as np
import pytest

from relax.build import build
from relax.driver.compile import parse_source
from relax.ir import expr as rx
from relax.ir.visitor import pre_order
from relax.runtime import allocator
from relax.script import parse
from relax.ir.pass_infra import PassContext, run_passes
from relax.transform.pipeline import pipeline
from relax.vm import VirtualMachine

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
MODELS = ["mlp", "cnn", "transformer"]
TRANSFORM = pathlib.Path(__file__).resolve().parents[1] / "transform"


class TrackingAllocator(allocator.NaiveAllocator):
    """A fresh buffer per request, counting bytes handed out and the peak of live bytes."""

    kind = "tracking"

    def __init__(self, device):
        super().__init__(device)
        self.live = self.peak = 0

    def alloc(self, nbytes):
        storage = super().alloc(nbytes)
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        weakref.finalize(storage.buffer.base, self._free, nbytes)
        return storage

    def _free(self, nbytes):
        self.live -= nbytes


allocator.ALLOCATORS.setdefault("tracking", TrackingAllocator)


def storage_sizes(mod) -> list[int]:
    """The byte sizes of every vm.alloc_storage in the lowered module (None: symbolic)."""
    sizes = []
    for func in mod.functions.values():
        if isinstance(func, rx.Function):
            for node in pre_order(func):
                if isinstance(node, rx.Call) and isinstance(node.op, rx.Op) and node.op.name == "relax.vm.alloc_storage":
                    size = node.args[0]
                    sizes.append(size.values[0].value if isinstance(size, rx.ShapeExpr) else None)
    return sizes


def lowered(mod, disabled=()):
    with PassContext(opt_level=2, disabled=set(disabled)):
        return run_passes(mod, pipeline(2))


def run_counting(mod, args, disabled=()):
    """Outputs, bytes allocated by one call and the peak of live bytes during it."""
    exe = build(lowered(mod, disabled), "llvm", lowered=True)
    vm = VirtualMachine(exe, "cpu", memory="tracking")
    vm["main"](*args)  # a first call: constants and caches settle
    tracker = vm.allocator(0)
    before, tracker.peak = tracker.allocated_bytes, tracker.live
    out = vm["main"](*args)
    return out, tracker.allocated_bytes - before, tracker.peak


def sample(name):
    mod = parse_source(str(SAMPLES / f"{name}.relax"))
    inputs = np.load(SAMPLES / "data" / f"{name}.inputs.npz")
    return mod, [inputs[p.name_hint] for p in mod["main"].params]


@pytest.mark.parametrize("name", MODELS)
def test_planned_storages_are_fewer_and_smaller_than_all_intermediates(name):
    mod, _ = sample(name)
    planned = storage_sizes(lowered(mod))
    every_tensor = storage_sizes(lowered(mod, disabled={"static-plan-block-memory"}))
    assert len(planned) < len(every_tensor)
    assert sum(planned) < sum(every_tensor)
    if name == "transformer":  # many intermediates of a few sizes: they share a small pool
        assert len(planned) * 4 <= len(every_tensor)
        assert sum(planned) * 3 <= sum(every_tensor)


@pytest.mark.parametrize("name", MODELS)
def test_planned_models_allocate_less_per_call_and_match_tvm(name):
    mod, args = sample(name)
    expected = np.load(SAMPLES / "data" / f"{name}.expected.npz")
    out, planned_bytes, planned_peak = run_counting(mod, args)
    _, naive_bytes, naive_peak = run_counting(mod, args, disabled={"static-plan-block-memory", "kill-after-last-use"})
    assert planned_bytes < naive_bytes
    assert planned_peak < naive_peak
    outputs = out if isinstance(out, tuple) else (out,)
    for index, key in enumerate(sorted(expected.files)):
        np.testing.assert_allclose(outputs[index], expected[key], rtol=1e-4, atol=1e-5)


def test_kills_lower_the_peak_of_live_bytes_without_planning():
    mod, args = sample("transformer")
    _, _, with_kills = run_counting(mod, args, disabled={"static-plan-block-memory"})
    _, _, without = run_counting(mod, args, disabled={"static-plan-block-memory", "kill-after-last-use"})
    assert with_kills * 3 <= without


def test_storage_reused_across_branches_computes_the_right_values():
    mod = parse((TRANSFORM / "static-plan-if.relax").read_text())
    vm = VirtualMachine(build(mod, "llvm", 2), "cpu", memory="naive")
    for x in (np.linspace(-1, 1, 8, dtype="float32"), np.linspace(1, 2, 8, dtype="float32")):
        b = x / 4
        r = b / 8 if x[0] > 0 else b / 4  # three halvings in the true branch, two in the false one
        kept, v = vm["main"](x)
        np.testing.assert_array_equal(kept, r / 2)
        np.testing.assert_array_equal(v, x / 4)


def test_symbolic_storages_without_bounds_run_at_several_sizes():
    mod = parse((TRANSFORM / "static-plan-symbolic.relax").read_text())
    sizes = storage_sizes(lowered(mod))
    assert sizes.count(16384) == 2  # `bounded` plans two storages at n's upper bound
    assert sizes.count(None) == 4  # symbolic: two planned in `unbounded` (d is dead code at -O2), two outputs
    vm = VirtualMachine(build(mod, "llvm", 2), "cpu", memory="naive")
    for rows in (1, 5, 300):
        x = np.random.default_rng(rows).standard_normal((rows, 4)).astype("float32")
        np.testing.assert_array_equal(vm["unbounded"](x), np.maximum(x, 0)[:, :2])
        np.testing.assert_array_equal(vm["bounded"](x), np.maximum(x, 0))
