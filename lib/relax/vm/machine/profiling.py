"""Timing a VM function (time_evaluator) and a per-call profile report (profile).

time_evaluator follows TVM's convention: `repeat` measurements, each the mean of
`number` runs; with `min_repeat_ms`, `number` grows until one measurement lasts at
least that long. profile runs a function once under an instrument that times every
Call instruction, and sums the times per called function.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import field

from ...diagnostics import UserError
from ...records import record


@record
class BenchmarkResult:
    """Seconds per run, one entry per repeat."""

    results: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results) if len(self.results) > 1 else 0.0

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    def __str__(self) -> str:
        ms = 1e3
        return (f"Execution time summary:\n"
                f" mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)  \n"
                f"{self.mean * ms:>10.4f}   {self.median * ms:>10.4f}   {self.max * ms:>10.4f}   "
                f"{self.min * ms:>10.4f}   {self.std * ms:>10.4f}\n")


def time_evaluator(vm, func_name: str, number: int, repeat: int, min_repeat_ms: float,
                   cooldown_interval_ms: float, repeats_to_cooldown: int):
    if number < 1 or repeat < 1:
        raise UserError("time_evaluator: number and repeat must be at least 1")
    function = vm[func_name]

    def evaluate(*args) -> BenchmarkResult:
        runs = number
        results = []
        function(*args)  # warm-up: first-call effects stay out of the measurements
        for index in range(repeat):
            while True:
                start = time.perf_counter()
                for _ in range(runs):
                    function(*args)
                elapsed = time.perf_counter() - start
                if elapsed * 1e3 >= min_repeat_ms or min_repeat_ms <= 0:
                    break
                runs = max(runs * 2, int(runs * min_repeat_ms / max(elapsed * 1e3, 1e-3)))
            results.append(elapsed / runs)
            if cooldown_interval_ms > 0 and (index + 1) % repeats_to_cooldown == 0:
                time.sleep(cooldown_interval_ms / 1e3)
        return BenchmarkResult(tuple(results))

    return evaluate


@record(mutable=True)
class ProfileRow:
    name: str
    calls: int = 0
    seconds: float = 0.0


@record(mutable=True)
class Report:
    """Time per called function during one run; `total` is the whole run."""

    rows: list[ProfileRow] = field(default_factory=list)
    total: float = 0.0

    def __str__(self) -> str:
        lines = [f"{'Name':<40} {'Calls':>7} {'Total (us)':>12} {'Mean (us)':>11} {'Percent':>8}"]
        for row in sorted(self.rows, key=lambda r: -r.seconds):
            percent = 100.0 * row.seconds / self.total if self.total else 0.0
            lines.append(f"{row.name:<40} {row.calls:>7} {row.seconds * 1e6:>12.2f} "
                         f"{row.seconds * 1e6 / row.calls:>11.2f} {percent:>7.2f}%")
        lines.append(f"{'Total':<40} {'':>7} {self.total * 1e6:>12.2f}")
        return "\n".join(lines) + "\n"


def profile(vm, func_name: str, args: tuple) -> Report:
    rows: dict[str, ProfileRow] = {}
    starts: list[float] = []

    # A cuda VM's kernels run asynchronously: wait for the GPU around each call to time it.
    synchronize = getattr(vm, "_synchronize", None) or (lambda: None)

    def instrument(func, name, before_run, ret_value, *call_args):
        synchronize()
        if before_run:
            starts.append(time.perf_counter())
            return None
        elapsed = time.perf_counter() - starts.pop()
        row = rows.setdefault(name, ProfileRow(name))
        row.calls += 1
        row.seconds += elapsed
        return None

    previous = vm._instrument
    vm.set_instrument(instrument)
    try:
        start = time.perf_counter()
        vm[func_name](*args)
        total = time.perf_counter() - start
    finally:
        vm.set_instrument(previous)
    return Report(list(rows.values()), total)
