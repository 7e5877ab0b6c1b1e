"""PackConstantWeights: constant matmul weights in the panel layout, their kernels reading it, same results.

The widths are those of the CPU model of the target in the PassContext (TARGET_KEY): most
cases pin x86-64-v4 (panels of 64 columns, gemv strips of 256)."""

import numpy as np

import relax
from relax.build import lower
from relax.ir import expr as rx
from relax.ir.analysis import collect
from relax.script import parse
from relax.transform.bind_params import BindParams
from relax.transform.pack_constant_weights import TARGET_KEY
from relax.ir.pass_infra import PassContext
from relax.vm import VirtualMachine

MLP = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 96), dtype="float32"), w1: R.Tensor((64, 96), dtype="float32"), b1: R.Tensor((64,), dtype="float32"), w2: R.Tensor((64, 64), dtype="float32")) -> R.Tensor((64, 64), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            lv: R.Tensor((96, 64), dtype="float32") = R.permute_dims(w1, axes=[1, 0])
            lv1: R.Tensor((64, 64), dtype="float32") = R.matmul(x, lv, out_dtype=None)
            lv2: R.Tensor((64, 64), dtype="float32") = R.add(lv1, b1)
            lv3: R.Tensor((64, 64), dtype="float32") = R.nn.relu(lv2)
            gv: R.Tensor((64, 64), dtype="float32") = R.matmul(lv3, w2, out_dtype=None)
            R.output(gv)
        return gv
'''

RNG = np.random.default_rng(5)
WEIGHTS = {"w1": RNG.standard_normal((64, 96)).astype("float32"), "b1": RNG.standard_normal(64).astype("float32"),
           "w2": RNG.standard_normal((64, 64)).astype("float32")}
X = RNG.standard_normal((64, 96)).astype("float32")


def _expected():
    return np.maximum(X @ WEIGHTS["w1"].T + WEIGHTS["b1"], 0) @ WEIGHTS["w2"]


V4 = "llvm -mcpu=x86-64-v4"


def _lowered(source, weights, disabled=(), target=V4, opt_level=2):
    mod = BindParams(weights).run(parse(source))
    return lower(mod, opt_level, PassContext(opt_level=opt_level, disabled=set(disabled), config={TARGET_KEY: target}))


def _constant_shapes(mod):
    """The shapes of the distinct weight constants of main."""
    return sorted(n.data.shape for n in collect(mod["main"], lambda n: isinstance(n, rx.Constant)) if n.data.ndim >= 2)


def _run(mod, *inputs):
    exe = relax.build(mod, "llvm", lowered=True)
    return VirtualMachine(exe, "cpu")["main"](*inputs)


def test_weights_packed_once_and_kernels_read_them():
    mod = _lowered(MLP, WEIGHTS, target="llvm -mcpu=x86-64-v3")
    assert _constant_shapes(mod) == [(4, 64, 16), (4, 96, 16)]  # no copy of a weight in its old layout
    shapes = [tuple(d.value for d in buffer.shape) for func in mod.prim_funcs().values() for _, buffer in func.buffer_map]
    assert (4, 96, 16) in shapes and (4, 64, 16) in shapes
    np.testing.assert_allclose(_run(mod, X), _expected(), rtol=1e-4, atol=1e-4)


def test_same_results_without_the_pass():
    packed = _run(_lowered(MLP, WEIGHTS), X)
    plain_mod = _lowered(MLP, WEIGHTS, disabled=["pack-constant-weights"])
    assert _constant_shapes(plain_mod) == [(64, 64), (96, 64)]
    np.testing.assert_allclose(packed, _run(plain_mod, X), rtol=1e-5, atol=1e-5)


SHARED = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def matmul(A: T.Buffer((T.int64(64), T.int64(64)), "float32"), B: T.Buffer((T.int64(64), T.int64(64)), "float32"), C: T.Buffer((T.int64(64), T.int64(64)), "float32")):
        for i0, i1, k in T.grid(T.int64(64), T.int64(64), T.int64(64)):
            with T.sblock("matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(A[v_i0, v_k], B[v_k, v_i1])
                T.writes(C[v_i0, v_i1])
                with T.init():
                    C[v_i0, v_i1] = T.float32(0.0)
                C[v_i0, v_i1] = C[v_i0, v_i1] + A[v_i0, v_k] * B[v_k, v_i1]

    @R.function
    def main(x: R.Tensor((64, 64), dtype="float32"), y: R.Tensor((64, 64), dtype="float32"), w: R.Tensor((64, 64), dtype="float32")) -> R.Tuple(R.Tensor((64, 64), dtype="float32"), R.Tensor((64, 64), dtype="float32")):
        R.func_attr({"num_input": 2})
        cls = Module
        with R.dataflow():
            a = R.call_tir(cls.matmul, (x, w), out_sinfo=R.Tensor((64, 64), dtype="float32"))
            b = R.call_tir(cls.matmul, (x, {second}), out_sinfo=R.Tensor((64, 64), dtype="float32"))
            gv: R.Tuple(R.Tensor((64, 64), dtype="float32"), R.Tensor((64, 64), dtype="float32")) = (a, b)
            R.output(gv)
        return gv
'''


def _packed_shapes(source, weights):
    from relax.transform.pack_constant_weights import PackConstantWeights

    with PassContext(config={TARGET_KEY: V4}):
        mod = PackConstantWeights().run(BindParams(weights).run(parse(source)))
    (buffer_shape,) = {tuple(d.value for d in mod["matmul"].buffer_map[1][1].shape)}
    return mod, buffer_shape


def test_kernel_shared_with_a_computed_operand_keeps_its_layout():
    w = RNG.standard_normal((64, 64)).astype("float32")
    y = RNG.standard_normal((64, 64)).astype("float32")
    mod, shape = _packed_shapes(SHARED.replace("{second}", "y"), {"w": w})
    assert shape == (64, 64) and _constant_shapes(mod) == [(64, 64)]
    a, b = _run(lower(mod, 2), X[:, :64].copy(), y)
    np.testing.assert_allclose(a, X[:, :64] @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b, X[:, :64] @ y, rtol=1e-4, atol=1e-4)


def test_kernel_called_twice_with_constants_is_packed_for_both():
    w = RNG.standard_normal((64, 64)).astype("float32")
    mod, shape = _packed_shapes(SHARED.replace("{second}", "w"), {"w": w})
    assert shape == (1, 64, 64) and _constant_shapes(mod) == [(1, 64, 64)]  # the shared weight packed once
    a, b = _run(lower(mod, 2), X[:, :64].copy(), X[:, :64].copy())
    np.testing.assert_allclose(a, X[:, :64] @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b, a)


def test_no_constant_weights_is_the_identity():
    mod = BindParams({}).run(parse(MLP))
    from relax.transform.pack_constant_weights import PackConstantWeights
    from relax.ir.pass_infra import run_passes

    fused = run_passes(mod, ["normalize", "legalize-ops", "annotate-tir-op-pattern", "fuse-ops", "fuse-tir"],
                       PassContext(opt_level=2))
    assert PackConstantWeights().run(fused) is fused


def test_cuda_builds_keep_the_plain_layout(monkeypatch):
    """The GPU schedules read B[k, j]: relax.build for cuda leaves the CPU-only pass out."""
    from relax.codegen import backends
    from relax.vm.codegen import codegen_vm

    seen, generate = [], codegen_vm.generate
    monkeypatch.setattr(codegen_vm, "generate", lambda mod: seen.append(mod) or generate(mod))
    monkeypatch.setattr(backends.CudaBackend, "start", lambda self, *args: [])
    relax.build(parse(MLP), "cuda -arch=sm_90", params=WEIGHTS)
    assert _constant_shapes(seen[0]) == [(64, 64), (96, 64)]


GEMV = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 96), dtype="float32"), w: R.Tensor((512, 96), dtype="float32"), b: R.Tensor((512,), dtype="float32")) -> R.Tensor((1, 512), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            lv: R.Tensor((96, 512), dtype="float32") = R.permute_dims(w, axes=[1, 0])
            lv1: R.Tensor((1, 512), dtype="float32") = R.matmul(x, lv, out_dtype=None)
            lv2: R.Tensor((1, 512), dtype="float32") = R.add(lv1, b)
            gv: R.Tensor((1, 512), dtype="float32") = R.nn.relu(lv2)
            R.output(gv)
        return gv
'''


def test_gemv_weight_packed_in_strips():
    weights = {"w": RNG.standard_normal((512, 96)).astype("float32"), "b": RNG.standard_normal(512).astype("float32")}
    x = RNG.standard_normal((1, 96)).astype("float32")
    mod = _lowered(GEMV, weights)
    assert _constant_shapes(mod) == [(2, 96, 256)]  # two strips of 256 columns, one per thread
    expected = np.maximum(x @ weights["w"].T + weights["b"], 0)
    np.testing.assert_allclose(_run(mod, x), expected, rtol=1e-4, atol=1e-4)


def test_o1_packs_the_unfused_matmuls():
    mod = _lowered(MLP, WEIGHTS, opt_level=1)
    assert _constant_shapes(mod) == [(1, 64, 64), (1, 96, 64)]
    exe = relax.build(mod, "llvm", opt_level=1, lowered=True)
    np.testing.assert_allclose(VirtualMachine(exe, "cpu")["main"](X), _expected(), rtol=1e-4, atol=1e-4)


def test_widths_follow_the_target_built_for(monkeypatch):
    """relax.build packs for its target; with no target (`relaxc -S`), for the generic `llvm`."""
    from relax.codegen import backends
    from relax.vm.codegen import codegen_vm

    from relax.tir.schedule.cpu import cpu_info
    from relax.tir.schedule.packed_weights import panel_width

    width = panel_width(cpu_info("llvm"))  # 8 on x86-64 (SSE: 6 x 2 vectors of 4)
    mod = BindParams(WEIGHTS).run(parse(MLP))
    assert _constant_shapes(lower(mod, 2)) == [(64 // width, 64, width), (64 // width, 96, width)]
    seen, generate = [], codegen_vm.generate
    monkeypatch.setattr(codegen_vm, "generate", lambda mod: seen.append(mod) or generate(mod))
    monkeypatch.setattr(backends.LlvmBackend, "start", lambda self, *args: [])
    relax.build(parse(MLP), "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3", params=WEIGHTS)
    assert _constant_shapes(seen[0]) == [(4, 64, 16), (4, 96, 16)]  # AVX2: 6 x 2 vectors of 8
