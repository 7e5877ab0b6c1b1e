"""Every PrimFunc of the TVM-printed corpus: lowered, checked against the lowered
form, and run against its unlowered self in the reference interpreter."""

import glob
import os

import numpy as np
import pytest

from relax import script
from relax.ir import dtype as dt
from relax.ir import tir
from relax.target import Target
from relax.tir import lower_for_codegen, run
from relax.tir.interpreter import Interpreter, InterpreterError
from relax.tir.rewrite import collect
from relax.tir.verify_lowered import verify_lowered

CORPUS = os.path.join(os.path.dirname(__file__), "..", "corpus")
SIZE = 3  # every symbolic shape variable
MAX_ELEMENTS = 20000
STEP_LIMIT = 60_000  # statements; larger kernels are skipped to keep the suite fast


def _corpus_functions():
    found = []
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.tvmscript"))):
        try:
            module = script.parse(open(path).read(), path)
        except Exception:  # noqa: BLE001 - files the parser cannot read yet are its own tests' business
            continue
        for name, func in module.prim_funcs().items():
            found.append(pytest.param(func, id=f"{os.path.basename(path)}:{name}"))
    return found


FUNCTIONS = _corpus_functions()


def _uses_threads(func) -> bool:
    return any(f.kind == "thread_binding" for f in collect(func.body, tir.For)) or any(
        a.attr_key == "thread_extent" for a in collect(func.body, tir.AttrStmt))


def _arguments(func, rng):
    machine = Interpreter()
    for param in func.params:
        buffer = func.buffer_of(param)
        for extent in (buffer.shape if buffer is not None else ()):
            if isinstance(extent, tir.Var):
                machine.env.setdefault(extent, SIZE)
        if buffer is None and not dt.is_float(param.dtype):
            machine.env[param] = SIZE
    args = []
    for param in func.params:
        buffer = func.buffer_of(param)
        if buffer is None:
            args.append(0.5 if dt.is_float(param.dtype) else SIZE)
            continue
        if buffer.dtype not in dt.SUPPORTED_NUMPY:
            pytest.skip(f"buffer {buffer.name} is {buffer.dtype}, which numpy cannot hold")
        shape = tuple(int(machine.eval(extent)) for extent in buffer.shape)
        if int(np.prod(shape)) > MAX_ELEMENTS:
            pytest.skip(f"buffer {buffer.name} has {int(np.prod(shape))} elements")
        if dt.is_float(buffer.dtype):
            args.append(rng.standard_normal(shape).astype(dt.to_numpy(buffer.dtype)))
        elif dt.is_bool(buffer.dtype):
            args.append(rng.integers(0, 2, shape).astype(bool))
        else:
            args.append(rng.integers(1, 3, shape).astype(dt.to_numpy(buffer.dtype)))
    return args


def test_the_corpus_has_functions():
    assert len(FUNCTIONS) >= 50


@pytest.mark.parametrize("func", FUNCTIONS)
def test_corpus_function_lowers_and_keeps_its_meaning(func):
    target = Target.parse("cuda -arch=sm_80") if _uses_threads(func) else Target.parse("llvm")
    lowered = lower_for_codegen(func, target)
    assert verify_lowered(lowered, target) == []
    args = _arguments(func, np.random.default_rng(0))
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    after = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        run(func, *before, step_limit=STEP_LIMIT)
    except (InterpreterError, ZeroDivisionError) as exc:
        pytest.skip(f"the interpreter cannot run the original: {exc}")
    run(lowered, *after)
    for x, y in zip(before, after):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
