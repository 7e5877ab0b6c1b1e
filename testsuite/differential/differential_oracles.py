"""Builds a generated program under several configurations and checks that they agree
with each other and with the numpy reference.

Configurations (`CONFIGS`): -O2 for this host's CPU run by the interpreter (the
default of relaxc and relaxrun), -O0, the compiled exec mode (with and without its
native tier), and the baseline x86-64 CPU (`llvm -mcpu=x86-64`: no AVX, no FMA).
Each VM runs main twice, on two sets of inputs, keeping the first call's results
while the second runs (a result the caller holds must not be overwritten).

Every configuration's results must lie within each output's error bound of the
float64 reference (exactly equal for integers and bool); the oracles (`PAIRS`) then
compare configurations with each other: within twice the bound where rounding may
differ (other passes or kernels), bit for bit where the kernels are the same and only
the VM differs.

`check_staged` builds the program as `make samples` does, stage by stage through the
tools' `main(argv)` (relaxc -S, relaxas, relaxc --emit kernels, relaxld), and one shot
(relaxc -o model.vmx): the two artifacts must be byte-identical and compute the same.
"""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import traceback
from dataclasses import dataclass

import numpy as np

os.environ.setdefault("RELAX_CACHE", "0")  # never read or fill the user's kernel cache

import relax  # noqa: E402
import relax.script  # noqa: E402
from relax.target import parse_target  # noqa: E402

BASELINE_TARGET = "llvm -mcpu=x86-64"


@dataclass(frozen=True)
class Config:
    name: str
    target: str  # "host": this machine's CPU and features, as relaxc uses without --target
    opt_level: int
    exec_mode: str
    native: bool = True  # compiled exec mode: a static function as one native call


DEFAULT = Config("-O2 host interp", "host", 2, "interp")
O0 = Config("-O0 host interp", "host", 0, "interp")
COMPILED = Config("-O2 host compiled", "host", 2, "compiled")
COMPILED_PYTHON = Config("-O2 host compiled, no native tier", "host", 2, "compiled", native=False)
BASELINE = Config("-O2 x86-64 interp", BASELINE_TARGET, 2, "interp")
CONFIGS = (DEFAULT, O0, COMPILED, COMPILED_PYTHON, BASELINE)
# Input sets per VM: main runs once on each, in turn.
CALLS = 2

# (oracle, configuration, configuration, how close): "bound" allows twice the error bound.
PAIRS = (
    ("-O0 vs -O2", O0, DEFAULT, "bound"),
    ("interp vs compiled exec mode", DEFAULT, COMPILED, "exact"),
    ("interp vs compiled exec mode without the native tier", DEFAULT, COMPILED_PYTHON, "exact"),
    ("native vs baseline target", DEFAULT, BASELINE, "bound"),
)


class Mismatch(AssertionError):
    """Configurations that disagree; the message ends with the program's text."""

    def __init__(self, program, failures: list[str], staged: bool = False):
        super().__init__("\n".join(failures) + f"\n\ninput seed: {program.seed}; program:\n" + program.source)
        self.program = program
        self.failures = failures
        self.staged = staged  # found by check_staged: the reproducer builds stage by stage too


# -- running ---------------------------------------------------------------------------
def build(source: str, target: str, opt_level: int):
    return relax.build(relax.script.parse(source, "program.relax"), target=parse_target(target),
                       opt_level=opt_level)


def run(exe, config: Config, input_sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """main's results for each set of inputs, called in turn on one VM, each as a list
    (one result or the fields of a tuple). Earlier results are kept, uncopied, while
    later calls run: they must survive them."""
    vm = relax.VirtualMachine(exe, "cpu", exec_mode=config.exec_mode, native=config.native)
    calls = []
    for inputs in input_sets:
        result = vm["main"](*[array.copy() for array in inputs])
        calls.append(list(result) if isinstance(result, (tuple, list)) else [result])
    return [[np.asarray(r) for r in results] for results in calls]


def run_configs(program, input_sets, configs=CONFIGS) -> dict[str, list | str]:
    """Each configuration's results per call, or the error it raised as text; one build
    per target and -O level."""
    builds: dict[tuple[str, int], object] = {}
    results: dict[str, list | str] = {}
    for config in configs:
        try:
            key = (config.target, config.opt_level)
            if key not in builds:
                builds[key] = build(program.source, config.target, config.opt_level)
            results[config.name] = run(builds[key], config, input_sets)
        except Exception:  # noqa: BLE001 - a valid program that fails to build or run is a finding
            results[config.name] = traceback.format_exc(limit=-3)
    return results


# -- comparing -------------------------------------------------------------------------
def difference(got: np.ndarray, expected: np.ndarray, value, tolerance: float | None) -> str | None:
    """Why `got` is not `expected` for output `value` (None when it is): shape, dtype,
    then elements, within `tolerance` for floats (None: exactly)."""
    if got.shape != tuple(value.shape):
        return f"shape {got.shape}, expected {tuple(value.shape)}"
    if got.dtype != np.dtype(value.dtype):
        return f"dtype {got.dtype}, expected {value.dtype}"
    if tolerance is None or value.kind != "float":
        wrong = got != expected
        if value.kind == "float":  # exact float comparison: NaN is NaN
            wrong &= ~(np.isnan(got) & np.isnan(np.asarray(expected, dtype=got.dtype)))
        tolerance = 0.0
    else:
        error = np.abs(got.astype(np.float64) - np.asarray(expected, np.float64))
        wrong = ~(error <= tolerance)  # NaN is wrong
    if not wrong.any():
        return None
    first = tuple(int(i) for i in np.argwhere(wrong)[0])
    return (f"{int(wrong.sum())} of {wrong.size} elements differ (tolerance {tolerance:.3g}); first at {first}: "
            f"{got[first]!r} vs {np.asarray(expected)[first]!r}")


def compare_results(program, got: list[np.ndarray], expected: list[np.ndarray], scale: float | None) -> list[str]:
    """Differences output by output; `scale` times each output's error bound is the
    tolerance (None: exact)."""
    if len(got) != len(expected):
        return [f"{len(got)} results, expected {len(expected)}"]
    problems = []
    for index, (value, a, b) in enumerate(zip(program.outputs, got, expected)):
        tolerance = None if scale is None else scale * value.bound.err
        problem = difference(a, b, value, tolerance)
        if problem:
            problems.append(f"result[{index}] ({value.name}): {problem}")
    return problems


def compare_calls(program, got: list, expected: list, scale: float | None) -> list[str]:
    """compare_results for each call, the problems prefixed with the call they are from."""
    return [f"call {call + 1}: {p}" for call, (a, b) in enumerate(zip(got, expected))
            for p in compare_results(program, a, b, scale)]


def input_sets(program) -> list[list[np.ndarray]]:
    return [program.make_inputs(call) for call in range(CALLS)]


def check_program(program, configs=CONFIGS, pairs=PAIRS) -> None:
    """Raises Mismatch, with the program's text, when a configuration fails, disagrees
    with the numpy reference, or disagrees with another configuration."""
    inputs = input_sets(program)
    expected = [program.reference(i) for i in inputs]
    results = run_configs(program, inputs, configs)
    failures = []
    for config in configs:
        outcome = results[config.name]
        if isinstance(outcome, str):
            failures.append(f"{config.name}: failed:\n{outcome}")
            continue
        failures += [f"{config.name} vs numpy: {p}" for p in compare_calls(program, outcome, expected, 1.0)]
    for oracle, first, second, closeness in pairs:
        a, b = results[first.name], results[second.name]
        if isinstance(a, str) or isinstance(b, str):
            continue
        scale = None if closeness == "exact" else 2.0
        failures += [f"{oracle} ({first.name} vs {second.name}): {p}" for p in compare_calls(program, b, a, scale)]
    if failures:
        raise Mismatch(program, failures)


# -- staged vs one-shot ----------------------------------------------------------------
def _tool(main, argv: list[str]) -> None:
    """Runs a tool's main in this process; raises with its messages when it fails."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        code = main([str(a) for a in argv])
    if code != 0:
        raise RuntimeError(f"{main.__module__} {' '.join(map(str, argv))} exited {code}:\n{stderr.getvalue()}")


def build_artifacts(source: str, directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """The staged and the one-shot artifact of `source`, both for this host at -O2."""
    from relaxas.cli import main as relaxas
    from relaxc.cli import main as relaxc
    from relaxld.cli import main as relaxld

    # Every stage's file is named after the source (model.*), as in `make samples`: the
    # lowered module's file name is part of the artifact.
    model = directory / "model.relax"
    model.write_text(source)
    staged, one_shot = directory / "staged", directory / "one-shot"
    staged.mkdir()
    one_shot.mkdir()
    _tool(relaxc, ["-S", model, "-o", staged / "model.vms"])
    _tool(relaxas, [staged / "model.vms", "-o", staged / "model.vmo"])
    _tool(relaxc, ["--emit", "kernels", staged / "model.vms", "-o", staged / "model.ko"])
    _tool(relaxld, [staged / "model.vmo", staged / "model.ko", "-o", staged / "model.vmx"])
    _tool(relaxc, [model, "-o", one_shot / "model.vmx"])
    return staged / "model.vmx", one_shot / "model.vmx"


def check_staged(program, directory: pathlib.Path) -> None:
    """Raises Mismatch when the staged and one-shot artifacts differ in bytes or results,
    or either disagrees with the numpy reference."""
    inputs = input_sets(program)
    expected = [program.reference(i) for i in inputs]
    try:
        staged, one_shot = build_artifacts(program.source, directory)
        staged_results = run(relax.load(str(staged)), DEFAULT, inputs)
        one_shot_results = run(relax.load(str(one_shot)), DEFAULT, inputs)
    except Exception:  # noqa: BLE001 - a valid program that fails to build or run is a finding
        raise Mismatch(program, ["staged or one-shot build failed:\n" + traceback.format_exc(limit=-3)], staged=True)
    failures = []
    if staged.read_bytes() != one_shot.read_bytes():
        failures.append(f"staged and one-shot artifacts differ ({staged.stat().st_size} vs "
                        f"{one_shot.stat().st_size} bytes)")
    failures += [f"staged vs one-shot: {p}" for p in compare_calls(program, one_shot_results, staged_results, None)]
    failures += [f"one-shot vs numpy: {p}" for p in compare_calls(program, one_shot_results, expected, 1.0)]
    if failures:
        raise Mismatch(program, failures, staged=True)
