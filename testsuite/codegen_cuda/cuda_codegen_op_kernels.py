"""The legalized kernels of the operator tests (testsuite/op), collected by running them.

The operator tests compute every operator case through numeric.run_op, which runs
the legalized PrimFunc in the TIR interpreter. Here those tests run once with
run_op's interpreter call wrapped to record each PrimFunc it runs, so the CUDA
tests build exactly the operator kernels the numeric tests check, with their
dtypes and shapes. Parametrized tests run for every parameter set; tests that
need fixtures are left out.

Only the kernels are wanted, not their values: a test that reaches run_op once (one
call, outside any loop) gets zeros instead of an interpreted result, and stops at its
first assertion having recorded its one kernel. A test with several calls runs them
in the interpreter, so that each call is reached.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import itertools
import pathlib
import sys
import textwrap

OP_TESTS = pathlib.Path(__file__).resolve().parent.parent / "op"


def _parameter_sets(function):
    """The keyword sets of a test's parametrize marks (their cartesian product)."""
    marks = [m for m in getattr(function, "pytestmark", []) if m.name == "parametrize"]
    axes = []
    for mark in marks:
        names, values = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        sets = []
        for value in values:
            if hasattr(value, "values") and hasattr(value, "marks"):  # pytest.param(...)
                value = tuple(value.values)
            elif len(names) == 1:
                value = (value,)
            sets.append(dict(zip(names, value)))
        axes.append(sets)
    for combination in itertools.product(*axes):
        merged = {}
        for part in combination:
            merged.update(part)
        yield merged


def _reaches_run_op_once(function) -> bool:
    """Whether `function`'s body calls run_op at one place, outside any loop or comprehension."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    calls = [node for node in ast.walk(tree)
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "run_op"]
    loops = (ast.For, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    looped = any(node in set(ast.walk(loop)) for loop in ast.walk(tree) if isinstance(loop, loops) for node in calls)
    return len(calls) == 1 and not looped


@functools.lru_cache(maxsize=1)
def operator_kernels() -> tuple:
    """((test id, PrimFunc), ...) of every kernel the operator tests' run_op ran."""
    sys.path.insert(0, str(OP_TESTS))
    numeric = importlib.import_module("numeric")
    recorded: list = []
    current = ["?"]
    interpret = [True]
    original = numeric.run

    def recording_run(func, *arrays):
        recorded.append((current[0], func))
        return original(func, *arrays) if interpret[0] else None

    numeric.run = recording_run
    try:
        for path in sorted(OP_TESTS.glob("test_*.py")):
            if "run_op" not in path.read_text():
                continue
            module = importlib.import_module(path.stem)
            for name, function in sorted(vars(module).items()):
                if not name.startswith("test_") or not inspect.isfunction(function):
                    continue
                wanted = set(inspect.signature(function).parameters)
                interpret[0] = not _reaches_run_op_once(function)
                for index, params in enumerate(_parameter_sets(function)):
                    if set(params) != wanted:
                        continue  # needs a fixture
                    current[0] = f"{path.stem}.{name}[{index}]"
                    try:
                        function(**params)
                    except Exception:  # noqa: BLE001 - the operator tests report their own failures
                        pass
    finally:
        numeric.run = original
    return tuple(recorded)
