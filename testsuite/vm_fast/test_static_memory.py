"""Static-shape storage kept across calls (vm/machine/static_memory.py): reused, never overwriting a live result."""

import numpy as np

from relax.build import build
from relax.runtime import register_func
from relax.script import parse
from relax.vm import VirtualMachine
from relax.vm.machine.static_calls import StaticTensor
from relax.vm.machine.static_memory import SiteStorage, StorageSite

CHAIN = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        with R.dataflow():
            a = R.add(x, x)
            b = R.multiply(a, x)
            c = R.add(b, a)
            R.output(c)
        return c
"""


def sites(vm):
    targets = [step[1] for function in vm._bytecode if function is not None for step in function.code if len(step) > 1]
    # The interpreter fuses a site with its tensor and call (static_calls.py): its StorageSite is inside.
    owners = [target.storage_site if isinstance(target, StaticTensor) else getattr(target, "__self__", None)
              for target in targets]
    return [owner for owner in owners if isinstance(owner, StorageSite)]


def test_static_allocations_become_sites_kept_across_calls(monkeypatch):
    fresh = []
    original = StorageSite._fresh
    monkeypatch.setattr(StorageSite, "_fresh", lambda site: fresh.append(site.nbytes) or original(site))
    vm = VirtualMachine(build(parse(CHAIN), "llvm", 0), "cpu", exec_mode="interp")
    assert len(sites(vm)) == 3
    x = np.arange(4, dtype=np.float32)
    vm["main"](x)
    assert len(fresh) == 3
    vm["main"](x)  # the first result was dropped: every storage is handed out again
    assert len(fresh) == 3
    held = vm["main"](x)
    vm["main"](x)  # the held result's storage is replaced, the others are kept
    assert len(fresh) == 4
    np.testing.assert_array_equal(held, (x + x) * x + x + x)
    assert all(isinstance(site.storage, SiteStorage) for site in sites(vm))


def test_a_held_result_is_never_overwritten_by_the_next_call():
    for level in (0, 2):
        vm = VirtualMachine(build(parse(CHAIN), "llvm", level), "cpu")
        x = np.arange(4, dtype=np.float32)
        first = vm["main"](x)
        kept = first.copy()
        second = vm["main"](x + 1)
        np.testing.assert_array_equal(first, kept)
        y = x + 1
        np.testing.assert_array_equal(second, (y + y) * y + (y + y))
        assert not np.shares_memory(first, second)


def test_a_tensor_kept_by_a_packed_function_is_not_reused():
    kept = []
    register_func("test.vm_fast.keep", lambda t: kept.append(t), override=True)
    text = CHAIN.replace("R.output(c)", "R.output(a, c)").replace(
        "        return c", "        _ = R.call_packed(\"test.vm_fast.keep\", a, sinfo_args=R.Tuple())\n        return c")
    vm = VirtualMachine(build(parse(text), "llvm", 0), "cpu")
    x = np.arange(4, dtype=np.float32)
    vm["main"](x)
    vm["main"](x * 3)
    np.testing.assert_array_equal(kept[0], x + x)
    np.testing.assert_array_equal(kept[1], 6 * x)


def test_naive_memory_allocates_every_call():
    vm = VirtualMachine(build(parse(CHAIN), "llvm", 0), "cpu", memory="naive")
    assert not sites(vm)
