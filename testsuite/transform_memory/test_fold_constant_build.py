"""How fold-constant builds its kernels (FOLD_TARGET): plain loop nests without LLVM
optimization, so a folded reduction adds up in loop order on every build host, and
a model's folded weights are what numpy computes."""

import pathlib

import numpy as np

import relax.codegen.build_kernels as build_kernels
from relax.driver.compile import parse_source
from relax.ir import expr as rx
from relax.ir.visitor import pre_order
from relax.script import parse
from relax.transform.fold_constant import FOLD_TARGET
from relax.ir.pass_infra import PassContext, run_passes
from test_fold_constant_models import SAMPLES, bind_weights

VALUES = np.random.default_rng(7).standard_normal(1000).astype(np.float32) * np.float32(1000)

SUM = """
# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def total(A: T.Buffer((1000,), "float32"), B: T.Buffer((1,), "float32")):
        B[0] = T.float32(0)
        for i in range(1000):
            B[0] = B[0] + A[i]

    @R.function
    def main(x: R.Tensor((1,), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
        cls = Module
        with R.dataflow():
            w = R.const(VALUES, "float32")
            s = R.call_tir(cls.total, (w,), out_sinfo=R.Tensor((1,), dtype="float32"))
            gv = R.add(x, s)
            R.output(gv)
        return gv
""".replace("VALUES", repr([float(v) for v in VALUES]))


def constants(mod) -> list[np.ndarray]:
    return [n.data for n in pre_order(mod["main"]) if isinstance(n, rx.Constant)]


def test_a_folded_reduction_adds_up_in_loop_order():
    sequential = np.float32(0)
    for value in VALUES:
        sequential = np.float32(sequential + value)
    with PassContext(opt_level=2):
        folded = run_passes(parse(SUM, "sum.relax"), ["fold-constant"])
    assert "total" not in folded.prim_funcs()
    (result,) = [c for c in constants(folded) if c.shape == (1,)]
    assert result.tobytes() == np.array([sequential], np.float32).tobytes()


def test_folding_kernels_are_built_plain_and_unoptimized(monkeypatch):
    built = []
    real = build_kernels.build_host_library

    def recording(mod, target=None, prefer="native", context=None):
        built.append((target, context.opt_level, sorted(dict(mod.prim_funcs()))))
        return real(mod, target, prefer, context=context)

    monkeypatch.setattr(build_kernels, "build_host_library", recording)
    mod = parse_source(str(SAMPLES / "mlp.relax"))
    weights = dict(np.load(SAMPLES / "data" / "mlp.inputs.npz"))
    weights.pop("x")
    with PassContext(opt_level=2):
        folded = run_passes(bind_weights(mod, weights), ["normalize", "legalize-ops", "fold-constant"])
    assert built and all(target == FOLD_TARGET and level == 0 for target, level, _ in built)
    transposed = {array.tobytes() for array in constants(folded)}
    for array in weights.values():
        if array.ndim == 2:
            assert np.ascontiguousarray(array.T).tobytes() in transposed
