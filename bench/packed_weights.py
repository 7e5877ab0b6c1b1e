"""Weights packed at build time against packed per call: the bench models both ways, in one run.

    python bench/packed_weights.py [mlp_b64 transformer ...] [--budget 4]

Each model of ../shared/bench is built twice from the same module with its weights
bound (what `relaxc --params` does): with the -O2 pipeline as it is, and with the pass
pack-constant-weights disabled (the register-tiled matmuls then copy B into panels on
every call). Both run in compiled exec mode; their outputs must agree. Timing
alternates between the two builds in batches of about 20 ms (a short pause and a few
untimed calls before each) until the budget is spent; the medians and their ratio are
printed. Compare rows of one run: absolute times drift on a shared machine.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "bench"))

from peers import TARGET, load_workload  # noqa: E402

MODELS = ("mlp_b1", "mlp_b64", "cnn", "transformer")
BUILDS = {"packed at build": set(), "packed per call": {"pack-constant-weights"}}


def lower_both(name: str, target):
    """{label: the model lowered that way} and its inputs, the weights packed for `target`:
    the target the kernels are built for, as relax.build and relaxc do."""
    from relax.build import lower
    from relax.ir.pass_infra import PassContext
    from relax.transform.bind_params import BindParams

    mod, weights, inputs = load_workload(name)
    bound = BindParams(weights).run(mod) if weights else mod
    return {label: lower(bound, 2, PassContext(opt_level=2, disabled=set(disabled)), target=target)
            for label, disabled in BUILDS.items()}, inputs


def build_both(name: str):
    from relax.build import build
    from relax.target import parse_target
    from relax.vm import VirtualMachine

    target = parse_target(TARGET)
    modules, inputs = lower_both(name, target)
    functions = {}
    for label, lowered in modules.items():
        exe = build(lowered, target, opt_level=2, lowered=True)
        functions[label] = VirtualMachine(exe, "cpu", exec_mode="compiled")["main"]
    return functions, inputs


def first(value):
    return np.asarray(value[0] if isinstance(value, (tuple, list)) else value)


def measure(functions, inputs, budget: float) -> dict[str, list[int]]:
    times = {label: [] for label in functions}
    end = time.perf_counter() + budget
    while time.perf_counter() < end:
        for label, function in functions.items():
            time.sleep(0.02)
            for _ in range(3):
                function(*inputs)
            start = time.perf_counter_ns()
            while time.perf_counter_ns() - start < 20_000_000:
                t0 = time.perf_counter_ns()
                function(*inputs)
                times[label].append(time.perf_counter_ns() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--budget", type=float, default=4.0, help="seconds of timing per model")
    args = parser.parse_args()
    labels = list(BUILDS)
    print(f"{'model':<12} {labels[0]:>16} {labels[1]:>16}  per call / at build")
    for name in args.models:
        functions, inputs = build_both(name)
        outputs = [first(f(*inputs)) for f in functions.values()]
        np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-4, atol=1e-5)
        times = measure(functions, inputs, args.budget)
        medians = [statistics.median(times[label]) / 1e3 for label in labels]
        print(f"{name:<12} {medians[0]:>13.1f} us {medians[1]:>13.1f} us  {medians[1] / medians[0]:.3f}", flush=True)


if __name__ == "__main__":
    main()
