"""Random dataflow graphs of matmuls, reductions, elementwise and injective operators:
-O2 (fused) computes what -O0 (one kernel per operator) computes."""

import random

import numpy as np
import pytest

from relax.build import build
from relax.script import parse
from relax.ir.pass_infra import run_passes
from relax.vm import VirtualMachine

# (template, operands, keeps an 8x8 shape)
SQUARE_OPS = [
    ("R.exp({a})", 1), ("R.add({a}, {b})", 2), ("R.multiply({a}, {b})", 2), ("R.nn.relu({a})", 1),
    ("R.matmul({a}, {b})", 2), ("R.permute_dims({a}, axes=[1, 0])", 1), ("R.nn.softmax({a}, axis=1)", 1),
    ("R.subtract({a}, {b})", 2), ("R.reshape({a}, R.shape([8, 8]))", 1),
]
COLUMN_OP = "R.sum({a}, axis=[1], keepdims=True)"  # 8x8 -> 8x1, broadcast back by add/multiply


def random_module(seed: int) -> str:
    rnd = random.Random(seed)
    values, columns, lines = ["x", "y"], set(), []
    for index in range(rnd.randint(5, 10)):
        name = f"v{index}"
        a = rnd.choice(values[-3:])
        if rnd.random() < 0.2 and a not in columns:
            lines.append(f"{name} = {COLUMN_OP.format(a=a)}")
            columns.add(name)
        else:
            template, arity = rnd.choice(SQUARE_OPS)
            if a in columns and (arity == 1 or "matmul" in template or "subtract" in template):
                continue
            b = rnd.choice([v for v in values if v not in columns])
            lines.append(f"{name} = {template.format(a=b if a in columns else a, b=a if a in columns else b)}")
        values.append(name)
    result = values[-1]
    body = "\n".join(f"            {line}" for line in lines)
    return f"""
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 8), dtype="float32"), y: R.Tensor((8, 8), dtype="float32")):
        with R.dataflow():
{body}
            R.output({result})
        return {result}
"""


@pytest.mark.parametrize("seed", range(16))
def test_fused_graph_computes_what_the_unfused_one_does(seed):
    mod = parse(random_module(seed))
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal((8, 8)).astype("float32") for _ in range(2))
    unfused, fused = (VirtualMachine(build(mod, "llvm", level), "cpu")["main"](x, y) for level in (0, 2))
    np.testing.assert_allclose(fused, unfused, rtol=1e-4, atol=1e-5)


def test_the_random_graphs_do_fuse():
    passes = ["normalize", "legalize-ops", "annotate-tir-op-pattern", "fuse-ops"]
    grouped = [run_passes(parse(random_module(seed)), passes) for seed in range(16)]
    primitive = [f for mod in grouped for f in mod.relax_functions().values() if f.attrs.get("Primitive")]
    assert len(primitive) >= 6
