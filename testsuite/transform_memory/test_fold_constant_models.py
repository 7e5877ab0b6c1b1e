"""FoldConstant on a real model: with the weights bound as constants (what
`relaxc --params` does), the weight transposes run once at build time through the
real kernels, and the model still computes TVM's outputs."""

import dataclasses
import pathlib

import numpy as np

from relax.build import build
from relax.driver.compile import parse_source
from relax.ir import expr as rx
from relax.ir.visitor import ExprMutator, pre_order
from relax.ir.pass_infra import run_passes
from relax.transform.pipeline import pipeline
from relax.vm import VirtualMachine

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"


def bind_weights(mod, weights: dict):
    """`main` with the named parameters replaced by constants."""
    func = mod["main"]
    binder = ExprMutator()
    for param in func.params:
        if param.name_hint in weights:
            binder.remember(param, rx.Constant(weights[param.name_hint]))
    params = tuple(p for p in func.params if p.name_hint not in weights)
    attrs = {k: v for k, v in func.attrs.items() if k != "num_input"}
    bound = dataclasses.replace(func, params=params, body=binder.visit(func.body), attrs=type(func.attrs)(attrs))
    return mod.with_function("main", bound)


def kernel_calls(mod) -> list[str]:
    return [n.name_hint for f in mod.functions.values() if isinstance(f, rx.Function)
            for n in pre_order(f) if isinstance(n, rx.GlobalVar)]


def test_bound_weights_are_transposed_at_build_time():
    mod = parse_source(str(SAMPLES / "mlp.relax"))
    inputs = dict(np.load(SAMPLES / "data" / "mlp.inputs.npz"))
    expected = np.load(SAMPLES / "data" / "mlp.expected.npz")
    x = inputs.pop("x")
    bound = bind_weights(mod, inputs)

    unfolded = run_passes(bound, [p for p in pipeline(2) if p != "fold-constant"])
    folded = run_passes(bound, pipeline(2))
    assert sum("transpose" in name for name in kernel_calls(unfolded)) == 3
    assert not any("transpose" in name for name in kernel_calls(folded))
    assert not any("transpose" in name for name in folded.prim_funcs())

    vm = VirtualMachine(build(folded, "llvm", lowered=True), "cpu")
    (out,) = vm["main"](x)
    np.testing.assert_allclose(out, expected[sorted(expected.files)[0]], rtol=1e-4, atol=1e-5)


def test_a_model_of_parameters_only_is_left_alone():
    mod = parse_source(str(SAMPLES / "mlp.relax"))
    once = run_passes(mod, ["normalize", "legalize-ops"])
    assert run_passes(once, ["fold-constant"]) is once
