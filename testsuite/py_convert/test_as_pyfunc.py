"""as_pyfunc's choices, one test each: the operator tables cover what the samples and
benchmarks use, unmapped operators and unknown backends are refused by name, constants
(bound weights) are written exactly, names never shadow what the text uses, the torch
table reads as torch (and runs where torch is installed), Python functions already in
a module stay as they are."""

import importlib.util
import pathlib

import numpy as np
import pytest

from relax import BasePyModule
from relax.build import build
from relax.diagnostics import DiagnosticError, UserError
from relax.driver.compile import parse_source
from relax.ir import expr as rx
from relax.ir.analysis import collect
from relax.py_convert import as_pyfunc, backend_table, convert_module, module_as_pyfunc
from relax.py_convert.writer import SPECIAL
from relax.script import parse
from relax.transform.bind_params import BindParams
from relax.vm import VirtualMachine
from sample_names import WORKER_SAMPLES

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
BENCH = ROOT.parent / "shared" / "bench"
LOWERED = ("lowered", "lowered_static")
# Not converted: lowered already, or written for several workers (R.ccl.* has no numpy or torch row).
UNCONVERTED = (*LOWERED, *WORKER_SAMPLES)
HAS_TORCH = importlib.util.find_spec("torch") is not None

SMALL = """
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(np: R.Tensor((2, 3), "float32"), self: R.Tensor((2, 3), "float32")):
        R_1 = R.nn.relu(np)
        lambda_ = R.add(R_1, self)
        return lambda_
"""


def _operators(path):
    mod = parse_source(str(path))
    calls = (c for f in mod.relax_functions().values()
             for c in collect(f, lambda n: isinstance(n, rx.Call) and isinstance(n.op, rx.Op)))
    return {call.op.name for call in calls}


def _used_operators():
    files = [p for p in SAMPLES.glob("*.relax") if p.stem not in UNCONVERTED] + sorted(BENCH.glob("*.relax"))
    return set().union(*(_operators(path) for path in files))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_every_operator_of_the_samples_and_benchmarks_has_a_row(backend):
    table = backend_table(backend).ops
    missing = sorted(name for name in _used_operators() if name not in table and name not in SPECIAL)
    assert not missing


def test_an_operator_without_a_row_is_refused_by_name_at_its_place():
    mod = parse_source(str(ROOT / "testsuite" / "relaxc" / "Inputs" / "pyfunc-unmapped.relax"))
    with pytest.raises(DiagnosticError, match="relax.nn.batch_norm has no numpy mapping; run legalize-ops"):
        mod.as_pyfunc("main")


def test_an_unknown_backend_or_function_is_refused():
    mod = parse(SMALL)
    with pytest.raises(UserError, match="unknown backend 'jax'"):
        mod.as_pyfunc("main", backend="jax")
    with pytest.raises(UserError, match="no Relax function 'other'"):
        mod.as_pyfunc("other")


def test_variables_named_like_what_the_text_uses_are_renamed():
    text = parse(SMALL).as_pyfunc("main")
    assert text.splitlines()[1] == "def main(self, np_1, self_1):"
    assert "R_1 = np.maximum(np_1, 0)" in text and "lambda_ = np.add(R_1, self_1)" in text


def test_the_torch_table_reads_as_torch():
    text = parse(SMALL).as_pyfunc("main", backend="torch")
    assert "import torch.nn.functional as F" in text
    assert "R_1 = F.relu(np_1)" in text and "np." not in text


@pytest.mark.parametrize("name", sorted(p.stem for p in SAMPLES.glob("*.relax") if p.stem not in (*UNCONVERTED, "py_func")))
def test_the_torch_text_of_every_sample_is_python(name):
    mod = parse_source(str(SAMPLES / f"{name}.relax"))
    for function in mod.relax_functions():
        compile(mod.as_pyfunc(function, backend="torch"), name, "exec")


@pytest.mark.skipif(not HAS_TORCH, reason="torch is optional and not installed")
def test_the_torch_text_computes_what_numpy_computes():
    import torch

    mod = parse_source(str(SAMPLES / "reductions.relax"))
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype("float32")
    expected = BasePyModule(convert_module(mod)).main(x)
    actual = BasePyModule(convert_module(mod, "torch")).main(torch.from_numpy(x))
    for got, want in zip(actual, expected):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_bound_weights_are_written_exactly_and_compute_what_the_vm_computes():
    """cnn with its weights bound as constants: the 512x10 dense weight is written as bytes
    (base64), the bias (10 elements) as a literal. Tolerance rtol 1e-4, atol 1e-5."""
    mod = parse_source(str(SAMPLES / "cnn.relax"))
    inputs = dict(np.load(SAMPLES / "data" / "cnn.inputs.npz"))
    names = [p.name_hint for p in mod["main"].params]
    bound = BindParams({name: inputs[name] for name in names[1:]}).run(mod)
    text = bound.as_pyfunc("main")
    assert "base64.b64decode(" in text and "import base64" in text
    expected = VirtualMachine(build(bound, "llvm", 0), "cpu")["main"](inputs["x"])
    actual = BasePyModule(parse(module_as_pyfunc(bound))).main(inputs["x"])
    np.testing.assert_allclose(actual[0], expected[0], rtol=1e-4, atol=1e-5)


def test_python_functions_of_the_module_are_kept_and_the_relax_ones_converted():
    mod = parse_source(str(SAMPLES / "py_func.relax"))
    converted = convert_module(mod)
    assert converted["main"] is mod["main"]
    assert isinstance(converted["my_identity_func"], rx.PyFunction)
    assert converted["my_identity_func"].source == as_pyfunc(mod, "my_identity_func").rstrip("\n")


def test_a_module_after_fusion_converts_and_computes_what_the_vm_computes():
    """mlp after fuse-ops: main calls the fused functions (self.fused_...), which call the
    kernels. Tolerance rtol 1e-4, atol 1e-5."""
    from relax.ir.pass_infra import run_passes
    from relax.transform.pipeline import FRONT, SIMPLIFY

    source = parse_source(str(SAMPLES / "mlp.relax"))
    fused = run_passes(source, [*FRONT, *SIMPLIFY, "legalize-ops", "annotate-tir-op-pattern", "fuse-ops"])
    text = module_as_pyfunc(fused)
    assert "= self.fused_" in text
    inputs = np.load(SAMPLES / "data" / "mlp.inputs.npz")
    args = [inputs[p.name_hint] for p in source["main"].params]
    expected = VirtualMachine(build(source, "llvm", 0), "cpu")["main"](*args)
    actual = BasePyModule(parse(text)).main(*args)
    np.testing.assert_allclose(actual[0], expected[0], rtol=1e-4, atol=1e-5)


def test_operators_no_sample_uses_compute_what_the_vm_computes():
    """Inputs/more_ops.relax: convolution with groups, dilation and uneven padding, pooling
    with ceil_mode and count_include_pad, integer division, rounding, and more, written
    with default attributes left out. Tolerance rtol 1e-4, atol 1e-5."""
    mod = parse_source(str(pathlib.Path(__file__).parent / "Inputs" / "more_ops.relax"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 7, 7)).astype("float32")
    w = rng.standard_normal((4, 2, 3, 3)).astype("float32")
    i = rng.integers(-20, 20, (3, 4)).astype("int32")
    j = (rng.integers(1, 6, (3, 4)) * rng.choice([-1, 1], (3, 4))).astype("int32")
    expected = VirtualMachine(build(mod, "llvm", 0), "cpu")["main"](x, w, i, j)
    actual = BasePyModule(parse(module_as_pyfunc(mod))).main(x, w, i, j)
    assert len(actual) == len(expected)
    for index, (got, want) in enumerate(zip(actual, expected)):
        assert got.dtype == want.dtype and got.shape == want.shape, f"output {index}"
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"output {index}")
