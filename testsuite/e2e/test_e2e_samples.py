"""Every sample through the whole pipeline (relax.build + VirtualMachine) against the
outputs TVM 0.27 computed for it (samples/data/NAME.expected.npz)."""

import pathlib

import numpy as np
import pytest

from relax.build import build
from relax.driver.compile import parse_source
from relax.runtime import register_func
from relax.vm import VirtualMachine
from sample_names import ARTIFACT_SAMPLES

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
NAMES = ARTIFACT_SAMPLES
KNOWN_FAILURES: dict[str, str] = {}


def _scale_by_two(x):
    return x * np.float32(2)


def _add_one_dps(x, out):
    out[...] = x + np.float32(1)


@pytest.fixture(autouse=True)
def sample_packed_functions():
    """What samples/packed_call.relax calls, registered for each test: other tests may
    register or remove functions of the same names."""
    register_func("samples.scale_by_two", _scale_by_two, override=True)
    register_func("samples.add_one_dps", _add_one_dps, override=True)


def flatten(value, out):
    if isinstance(value, tuple):
        for item in value:
            flatten(item, out)
    else:
        out.append(np.asarray(value))
    return out


def run_sample(name: str, opt_level: int, target: str = "llvm"):
    mod = parse_source(str(SAMPLES / f"{name}.relax"))
    inputs = np.load(SAMPLES / "data" / f"{name}.inputs.npz")
    vm = VirtualMachine(build(mod, target, opt_level), "cpu")
    args = [inputs[p.name_hint] for p in mod["main"].params]
    return flatten(vm["main"](*args), [])


@pytest.mark.parametrize("name", NAMES)
def test_sample_matches_tvm_unoptimized(name):
    _check_sample(name, 0, "llvm")


@pytest.mark.parametrize("name", NAMES)
def test_sample_matches_tvm(name, schedule_target):
    """At -O2 the schedules apply: for each CPU model the host runs (cpu_targets.py)."""
    _check_sample(name, 2, schedule_target)


def _check_sample(name: str, opt_level: int, target: str):
    if name in KNOWN_FAILURES:
        pytest.xfail(KNOWN_FAILURES[name])
    expected = np.load(SAMPLES / "data" / f"{name}.expected.npz")
    outputs = run_sample(name, opt_level, target)
    assert len(outputs) == len(expected.files)
    for index, key in enumerate(sorted(expected.files)):
        np.testing.assert_allclose(outputs[index], expected[key], rtol=1e-4, atol=1e-5, err_msg=f"output {key}")


def test_dynamic_batch_runs_at_several_batch_sizes_from_one_build():
    mod = parse_source(str(SAMPLES / "dynamic_batch.relax"))
    inputs = dict(np.load(SAMPLES / "data" / "dynamic_batch.inputs.npz"))
    vm = VirtualMachine(build(mod), "cpu")
    names = [p.name_hint for p in mod["main"].params]
    w1, b1, w2, b2 = (inputs[n] for n in names[1:])
    for batch in (1, 3, 17):
        x = np.random.default_rng(batch).standard_normal((batch, 784)).astype("float32")
        (out,) = flatten(vm["main"](x, w1, b1, w2, b2), [])
        hidden = np.maximum(x @ w1.T + b1, 0)
        logits = hidden @ w2.T + b2
        probabilities = np.exp(logits - logits.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        assert out.shape == (batch, 10)
        np.testing.assert_allclose(out, probabilities, rtol=1e-4, atol=1e-5)


def test_a_wrong_input_shape_names_the_parameter():
    mod = parse_source(str(SAMPLES / "mlp.relax"))
    inputs = np.load(SAMPLES / "data" / "mlp.inputs.npz")
    vm = VirtualMachine(build(mod), "cpu")
    args = [inputs[p.name_hint] for p in mod["main"].params]
    args[0] = np.zeros((1, 783), "float32")
    with pytest.raises(Exception, match=r"parameter 'x'.*expected 784, got 783"):
        vm["main"](*args)
