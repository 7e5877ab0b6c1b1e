"""Kernels written in TVMScript (samples and the TVM-printed corpus), parsed, lowered and
compiled, against numpy and against the reference TIR interpreter."""

import pathlib

import numpy as np
import pytest

from relax.codegen import build_host_library
from relax.runtime.kernels.metadata import evaluate
from relax.script import parse
from relax.tir import interpreter

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = sorted(ROOT.glob("samples/*.relax")) + sorted((ROOT / "testsuite" / "corpus").glob("*.tvmscript"))


def _module(path):
    try:
        return parse(path.read_text(), str(path))
    except Exception:  # noqa: BLE001 - files the parser does not take yet are another test's business
        return None


@pytest.fixture(scope="module")
def custom():
    return build_host_library(parse((ROOT / "samples" / "custom_kernel.relax").read_text()))


def test_custom_matmul_with_init(custom):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 16), np.float32), rng.standard_normal((16, 4), np.float32)
    c = np.full((8, 4), np.nan, np.float32)
    custom.get_function("matmul")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_custom_softmax(custom):
    x = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32) * 5
    out = np.zeros((8, 4), np.float32)
    custom.get_function("softmax")(x, out)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-6, atol=1e-7)


def test_custom_symbolic_size(custom):
    scale_add = custom.get_function("scale_add")
    assert scale_add.info.symbolic_vars == ("n",)
    for n in (1, 17, 1000):
        v = np.linspace(-1, 1, n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        scale_add(v, 0.5, 3, out)
        np.testing.assert_allclose(out, v * 0.5 + 3, rtol=1e-7)


def _arguments(function, rng):
    values = {name: 3 for name in function.info.symbolic_vars}
    values.update({p.name: 2 for p in function.info.params if p.kind == "scalar" and not p.dtype.startswith("float")})
    args = []
    for p in function.info.params:
        if p.kind == "scalar":
            args.append(0.5 if p.dtype.startswith("float") else values[p.name])
            continue
        shape = tuple(evaluate(d, values) for d in p.shape)
        if p.dtype.startswith("float"):
            args.append(rng.standard_normal(shape).astype(p.dtype))
        elif p.dtype == "bool":
            args.append(rng.integers(0, 2, shape).astype(bool))
        else:
            args.append(rng.integers(1, 4, shape).astype(p.dtype))  # no zero divisors, valid indices
    return args


# Corpus files with kernels a CPU build must refuse, and the error it gives.
REFUSED = {
    "tir_launch_thread.tvmscript": "binds the GPU thread axis 'bx'",
    "tir_thread_binding.tvmscript": "needs a cuda target",
    "tir_lowlevel_while_assert.tvmscript": "'tir.call_packed' calls a PackedFunc",
    "tir_module_multiple_funcs.tvmscript": "calls 'add', another function of the module",
    # numpy (so the runtime) has no bfloat16 or float8 tensors to pass such a kernel.
    "tir_casts_and_dtypes.tvmscript": "data type 'bfloat16' is not supported on CPU targets",
}


# Kernels too big for the Python interpreter in a unit test, with a numpy reference instead.
NUMPY_REFERENCES = {
    "tir_sblock_matmul.tvmscript": {"matmul": lambda a, b, c: (a, b, a @ b)},
}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_kernel_matches_the_interpreter(path):
    mod = _module(path)
    if mod is None or not mod.prim_funcs():
        pytest.skip("no kernels the parser takes")
    if path.name in REFUSED:
        with pytest.raises(Exception, match=REFUSED[path.name]):
            build_host_library(mod)
        return
    library = build_host_library(mod)
    for name, func in mod.prim_funcs().items():
        function = library.get_function(name)
        args = _arguments(function, np.random.default_rng(0))
        expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        if function.info.ret_dtype:
            continue  # the interpreter has no T.ret; test_scalar_result checks it
        function(*args)
        reference = NUMPY_REFERENCES.get(path.name, {}).get(name)
        if reference is not None:
            expected = reference(*expected)
        else:
            interpreter.run(func, *expected)
        for got, want in zip(args, expected):
            if isinstance(got, np.ndarray):
                # Float tolerance: reassociated sums and libm vs numpy differ in the last bits.
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{path.name}:{name}")


def test_scalar_result():
    """scalar_add(a: int32, b: float32, c: int64, d: bool) -> float32 returns through T.ret."""
    mod = parse((ROOT / "testsuite" / "corpus" / "tir_scalar_params_returns.tvmscript").read_text())
    scalar_add = build_host_library(mod).get_function("scalar_add")
    assert scalar_add.info.ret_dtype == "float32"
    result = scalar_add(2, 0.5, 3, True)
    assert isinstance(result, np.float32) and result == np.float32(5.5)
    assert scalar_add(-7, 0.25, 1, True) == np.float32(-5.75)
    assert scalar_add(2, 0.5, 3, False) == 0.0
