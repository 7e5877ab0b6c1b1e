"""as_pyfunc on every sample: the module printed with every Relax function converted
(`relaxc --emit pyfunc`) parses back, and relax.BasePyModule running it computes what the
VM computes for the original, before legalization (-O0's input: high-level operators ->
numpy) and after legalize-ops (nearly everything a call_tir -> self.call_tir).
Tolerance: rtol 1e-4, atol 1e-5 (numpy and the kernels round differently)."""

import pathlib

import numpy as np
import pytest

from relax import BasePyModule
from relax.build import build
from relax.diagnostics import DiagnosticError
from relax.driver.compile import parse_source
from relax.ir.pass_infra import run_passes
from relax.py_convert import module_as_pyfunc
from relax.runtime import register_func
from relax.script import parse
from relax.vm import VirtualMachine
from sample_names import WORKER_SAMPLES

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
# Already lowered to the VM form (explicit allocations and builtins): as_pyfunc refuses them.
LOWERED = ("lowered", "lowered_static")
# py_func holds a Python function already; the others are Relax through and through.
# Written for several workers (R.ccl.* collectives): they run in sessions (testsuite/disco), not alone.
NAMES = sorted(p.stem for p in SAMPLES.glob("*.relax") if p.stem not in (*LOWERED, *WORKER_SAMPLES, "py_func"))
STAGES = {"O0-input": [], "legalized": ["normalize", "lambda-lift", "legalize-ops"]}


@pytest.fixture(autouse=True)
def sample_packed_functions():
    register_func("samples.scale_by_two", lambda x: x * np.float32(2), override=True)
    register_func("samples.add_one_dps", _add_one_dps, override=True)


def _add_one_dps(x, out):
    out[...] = x + np.float32(1)


def flatten(value, out):
    if isinstance(value, (tuple, list)):
        for item in value:
            flatten(item, out)
    else:
        out.append(np.asarray(value))
    return out


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("name", NAMES)
def test_converted_sample_computes_what_the_vm_computes(name, stage):
    mod = run_passes(parse_source(str(SAMPLES / f"{name}.relax")), STAGES[stage])
    converted = BasePyModule(parse(module_as_pyfunc(mod)))
    inputs = np.load(SAMPLES / "data" / f"{name}.inputs.npz")
    args = [inputs[p.name_hint] for p in mod["main"].params]
    expected = flatten(VirtualMachine(build(mod, "llvm", 0), "cpu")["main"](*args), [])
    actual = flatten(converted.main(*args), [])
    assert len(actual) == len(expected)
    for index, (got, want) in enumerate(zip(actual, expected)):
        assert got.dtype == want.dtype and got.shape == want.shape, f"output {index}"
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"output {index}")


@pytest.mark.parametrize("name", LOWERED)
def test_a_module_lowered_to_the_vm_is_refused(name):
    mod = parse_source(str(SAMPLES / f"{name}.relax"))
    with pytest.raises(DiagnosticError, match="lowered to the VM form"):
        mod.as_pyfunc("main")
