"""How fold-constant builds its kernels (FOLD_TARGET): plain loop nests without LLVM
optimization, so a folded reduction adds up in loop order on every build host, and
a model's folded weights are what numpy computes."""

import pathlib

import numpy as np
import pytest

import relax.codegen.build_kernels as build_kernels
from relax.driver.compile import parse_source
from relax.ir import expr as rx
from relax.ir import tir
from relax.ir.visitor import pre_order
from relax.script import parse
from relax.tir.rewrite import collect
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


@pytest.fixture
def fold_builds(monkeypatch) -> list:
    """(module, target, context) of each library fold-constant builds, recorded as it builds them."""
    builds = []
    real = build_kernels.build_host_library

    def recording(mod, target=None, prefer="native", context=None):
        builds.append((mod, target, context))
        return real(mod, target, prefer, context=context)

    monkeypatch.setattr(build_kernels, "build_host_library", recording)
    return builds


def test_folding_kernels_are_built_plain_and_unoptimized(fold_builds):
    mod = parse_source(str(SAMPLES / "mlp.relax"))
    weights = dict(np.load(SAMPLES / "data" / "mlp.inputs.npz"))
    weights.pop("x")
    with PassContext(opt_level=2):
        folded = run_passes(bind_weights(mod, weights), ["normalize", "legalize-ops", "fold-constant"])
    assert fold_builds and all(target == FOLD_TARGET and context.opt_level == 0 for _, target, context in fold_builds)
    transposed = {array.tobytes() for array in constants(folded)}
    for array in weights.values():
        if array.ndim == 2:
            assert np.ascontiguousarray(array.T).tobytes() in transposed


TRANSPOSE = """
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1024), dtype="float32"), w: R.Tensor((512, 1024), dtype="float32")) -> R.Tensor((1, 512), dtype="float32"):
        with R.dataflow():
            wt: R.Tensor((1024, 512), dtype="float32") = R.permute_dims(w, axes=[1, 0])
            gv: R.Tensor((1, 512), dtype="float32") = R.matmul(x, wt, out_dtype="float32")
            R.output(gv)
        return gv
"""


def folds_the_transpose(seed: int) -> bool:
    """Whether TRANSPOSE with a random 512 x 1024 weight bound folds to the weight's transpose."""
    weight = np.random.default_rng(seed).standard_normal((512, 1024)).astype(np.float32)
    with PassContext(opt_level=2):
        folded = run_passes(bind_weights(parse(TRANSPOSE, "transpose.relax"), {"w": weight}),
                            ["normalize", "legalize-ops", "fold-constant"])
    return np.ascontiguousarray(weight.T).tobytes() in {array.tobytes() for array in constants(folded)}


def test_folding_kernels_run_on_one_thread_without_the_thread_pool(fold_builds, monkeypatch):
    """A folding kernel runs once: compiling the kernel thread pool for it (an LLVM build
    of its own) costs more than more threads save on a weight's loop. A transpose big
    enough for the default CPU schedule's parallel loop is folded by a plain nest."""
    import relax.runtime.kernels.library as library

    pool_builds = []
    monkeypatch.setattr(library, "ensure_pool", lambda: pool_builds.append(1))
    assert folds_the_transpose(seed=3)
    assert fold_builds and not pool_builds
    lowered = [build_kernels.lower(func, build_kernels._parsed(target), context)
               for mod, target, context in fold_builds for func in mod.prim_funcs().values()]
    assert not [loop for func in lowered for loop in collect(func.body, tir.For) if loop.kind == "parallel"]


def test_large_folds_run_on_every_core_with_the_same_result(fold_builds, monkeypatch):
    """Past PARALLEL_FOLD_BYTES of buffers a round's kernels get the default CPU
    schedule's parallel loops; they compute the same bytes."""
    import relax.transform.fold_constant as fold_constant

    monkeypatch.setattr(fold_constant, "PARALLEL_FOLD_BYTES", 512 * 1024 * 4 * 2 - 1)  # the transpose's two buffers
    assert folds_the_transpose(seed=5)
    assert [target for _, target, _ in fold_builds] == [fold_constant.PARALLEL_FOLD_TARGET]
