"""Every bench model built with its weights bound (relax.build(params=...)) computes
what numpy computes from the same weights, and what the unbound model computes with
the weights passed as inputs. The bound artifact carries the weights through the
.vmx file and its `main` takes the real input only.

Tolerances: bound against unbound runs the same kernels on the same data (rtol 1e-5,
atol 1e-6: folding a transpose at build time changes no arithmetic); against numpy,
float32 sums in another order (rtol 1e-4, atol 1e-5; 1e-3 on the transformer, whose
layer norms and softmax amplify rounding)."""

import pathlib

import numpy as np
import pytest

import relax
import relax.build  # noqa: F401 - binds the submodule as relax.build
from relax.driver.compile import parse_source
from relax.ir import expr as rx
from relax.ir.visitor import pre_order
from relax.transform.bind_params import BindParams

BENCH = pathlib.Path(__file__).resolve().parents[3] / "shared" / "bench"
# The bench models live in the workplace's shared/ beside the checkout (there in CI); a
# clone elsewhere has no models to bind.
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="shared/bench is not beside the checkout")


def mlp(x, w):
    h = np.maximum(x @ w["fc1_weight"].T + w["fc1_bias"], 0)
    h = np.maximum(h @ w["fc2_weight"].T + w["fc2_bias"], 0)
    return h @ w["fc3_weight"].T + w["fc3_bias"]


def conv3x3(x, weight, bias):
    """NCHW convolution, stride 1, padding 1."""
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))  # n c h w kh kw
    return np.einsum("nchwij,ocij->nohw", windows, weight) + bias[None, :, None, None]


def max_pool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def cnn(x, w):
    h = max_pool2(np.maximum(conv3x3(x, w["conv1_weight"], w["conv1_bias"]), 0))
    h = max_pool2(np.maximum(conv3x3(h, w["conv2_weight"], w["conv2_bias"]), 0))
    return h.reshape(1, -1) @ w["fc_weight"].T + w["fc_bias"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def transformer(x, w):
    from math import erf

    def heads(t):  # (1, 128, 256) -> (1, 4, 128, 64)
        return t.reshape(1, 128, 4, 64).transpose(0, 2, 1, 3)

    q, k, v = (heads(x @ w[m] + w[b]) for m, b in
               (("MatMul_99", "q_bias"), ("MatMul_115", "k_bias"), ("MatMul_116", "v_bias")))
    scores = q @ k.transpose(0, 1, 3, 2) * 0.125
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    attention = (scores / scores.sum(-1, keepdims=True)) @ v
    attention = attention.transpose(0, 2, 1, 3).reshape(1, 128, 256) @ w["MatMul_121"] + w["o_bias"]
    h = layer_norm(x + attention, w["ln1_weight"], w["ln1_bias"])
    f = h @ w["MatMul_122"] + w["ff1_bias"]
    f = f * (1 + np.vectorize(erf)(f / np.sqrt(2))) * 0.5
    return layer_norm(h + f @ w["MatMul_123"] + w["ff2_bias"], w["ln2_weight"], w["ln2_bias"])


MODELS = {"mlp_b1": (mlp, 1e-4), "mlp_b64": (mlp, 1e-4), "cnn": (cnn, 1e-4), "transformer": (transformer, 1e-3)}


def load_model(name):
    mod = parse_source(str(BENCH / f"{name}.relax"))
    weights = dict(np.load(BENCH / f"{name}.params.npz"))
    shape = [int(d.value) for d in mod["main"].params[0].struct_info.shape_values]
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    return mod, weights, x


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bound_model_matches_numpy_and_the_unbound_model(name, schedule_target):
    mod, weights, x = load_model(name)
    oracle, tolerance = MODELS[name]
    bound = relax.VirtualMachine(relax.build(mod, schedule_target, opt_level=2, params=weights), "cpu")
    unbound = relax.VirtualMachine(relax.build(mod, schedule_target, opt_level=2), "cpu")
    got = bound["main"](x)
    weight_inputs = [weights[p.name_hint] for p in mod["main"].params[1:]]
    np.testing.assert_allclose(got, unbound["main"](x, *weight_inputs), rtol=1e-5, atol=1e-6)
    expected = oracle(x.astype("float64"), {k: v.astype("float64") for k, v in weights.items()})
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance / 10)


def test_weights_travel_in_the_artifact(tmp_path):
    mod, weights, x = load_model("mlp_b1")
    exe = relax.build(mod, "llvm", params=weights)
    path = tmp_path / "mlp_b1.vmx"
    exe.export(str(path))
    # The file holds every weight once, as float32 constants (669 706 values).
    assert path.stat().st_size >= sum(w.nbytes for w in weights.values())
    vm = relax.VirtualMachine(relax.load(str(path)), "cpu")
    np.testing.assert_allclose(vm["main"](x), mlp(x.astype("float64"), weights), rtol=1e-4, atol=1e-5)
    with pytest.raises(Exception, match="takes 1 arguments"):
        vm["main"](x, weights["fc1_weight"])


def kernel_calls(mod) -> list[str]:
    return [n.name_hint for n in pre_order(mod["main"]) if isinstance(n, rx.GlobalVar)]


def test_weight_only_work_is_done_at_build_time():
    """cnn: the two bias reshapes and the dense weight's transpose fold away; only the
    reshape of an activation (the flatten) still runs."""
    mod, weights, _ = load_model("cnn")
    unbound = kernel_calls(relax.build.lower(mod, 2))
    bound = relax.build.lower(BindParams(weights).run(mod), 2)
    layout = [c for c in kernel_calls(bound) if "transpose" in c or "reshape" in c]
    assert len([c for c in unbound if "transpose" in c or "reshape" in c]) == 4
    assert len(layout) == 1, layout
    assert [p.name_hint for p in bound["main"].params] == ["x"]
