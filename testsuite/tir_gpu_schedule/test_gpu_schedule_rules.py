"""GPU schedule rules (relax.tir.gpu_schedule): legalized kernels, scheduled for cuda and run on the
GPU simulator, compute what the unscheduled block form computes in the reference interpreter, and
what numpy computes.

Sizes are small and odd (1, 7, 13, 33, 100, symbolic) so guards and partial tiles/warps run. Tolerances:
float32 rtol/atol 1e-5 for elementwise and max/min (exact), 1e-4 for sums (terms regrouped by the
warp reduction and the tiles); float16 2e-2 (float16 accumulation, regrouped).
"""

import numpy as np
import pytest

from relax.build import lower
from relax.ir import tir
from relax.script import parse
from relax.target import Target
from relax.tir import lower_for_codegen, run
from relax.diagnostics import UserError
from relax.tir.gpu_schedule import CONFIG_KEY, GpuOptions, GPUSchedule, MatmulTile, choose_rule
from relax.tir.gpu_schedule.matmul import TILE_KEY
from relax.tir.gpu_simulator import simulate
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.ir.pass_infra import PassContext

from dataflow_kernels import lowered_kernels

TARGET = Target.parse("cuda -arch=sm_80 -max_threads_per_block=256")
F32_SUM = dict(rtol=1e-4, atol=1e-4)
F16 = dict(rtol=2e-2, atol=2e-2)


def _kernels(params: str, body: str) -> dict:
    return lowered_kernels(params, f"out = {body}", 0)


def _only(params: str, body: str) -> tir.PrimFunc:
    (func,) = _kernels(params, body).values()
    return func


def _arrays(func, sizes: dict, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    arrays = []
    for _, buffer in func.buffer_map:
        shape = tuple(d.value if isinstance(d, tir.IntImm) else sizes[d.name] for d in buffer.shape)
        arrays.append(rng.standard_normal(shape).astype(buffer.dtype))
    return arrays


def _rules(func) -> list[str]:
    statements, _ = top_level(func.body)
    return [choose_rule(stmt, GpuOptions(256)) for stmt in statements]


def _check(func, sizes=None, tolerance=None, seed=0) -> list:
    """Scheduled + simulated vs the plain interpreter; returns (inputs, simulated outputs)."""
    tolerance = tolerance or dict(rtol=1e-5, atol=1e-5)
    lowered = lower_for_codegen(func, TARGET)
    assert any(loop.kind == "thread_binding" for loop in collect(lowered.body, tir.For))
    inputs = _arrays(func, sizes or {}, seed)
    reference, simulated = [x.copy() for x in inputs], [x.copy() for x in inputs]
    run(func, *reference)
    simulate(lowered, *simulated)
    np.testing.assert_allclose(simulated[-1].astype(np.float64), reference[-1].astype(np.float64), **tolerance)
    return inputs, simulated


def _shared_allocations(func) -> list:
    return [a for a in collect(lower_for_codegen(func, TARGET).body, tir.Allocate) if a.scope == "shared"]


def _calls(func, op: str) -> list:
    return [c for c in collect(lower_for_codegen(func, TARGET).body, tir.Call) if c.op == op]


# -- elementwise -----------------------------------------------------------------------------------

@pytest.mark.parametrize("rows,cols", [(1, 1), (7, 13), (33, 100), (100, 33)])
def test_add_is_elementwise_and_matches_numpy(rows, cols):
    func = _only(f'a: R.Tensor(({rows}, {cols}), "float32"), b: R.Tensor(({cols},), "float32")', "R.add(a, b)")
    assert _rules(func) == ["elementwise"]
    (a, b, _), (_, _, out) = _check(func)
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


def test_large_elementwise_has_several_elements_per_thread():
    func = _only('a: R.Tensor((33, 100), "float32")', "R.exp(a)")
    unrolled = [f for f in collect(lower_for_codegen(func, TARGET).body, tir.For) if f.kind == "unrolled"]
    assert unrolled and unrolled[0].extent.value == 4
    (a, _), (_, out) = _check(func)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)


@pytest.mark.parametrize("n", [1, 13, 100])
def test_symbolic_elementwise(n):
    func = _only('a: R.Tensor(("n", 7), "float16")', "R.multiply(a, a)")
    assert _rules(func) == ["elementwise"]
    (a, b, _), (_, _, out) = _check(func, {"n": n})
    np.testing.assert_array_equal(out, a * b)


# -- row reductions --------------------------------------------------------------------------------

@pytest.mark.parametrize("rows,cols", [(1, 1), (7, 13), (3, 33), (2, 100)])
def test_sum_uses_warp_shuffles_and_matches_numpy(rows, cols):
    func = _only(f'a: R.Tensor(({rows}, {cols}), "float32")', "R.sum(a, axis=[1])")
    assert _rules(func) == ["row-reduction"]
    assert _calls(func, "tir.tvm_warp_shuffle_down")
    (a, _), (_, out) = _check(func, tolerance=F32_SUM)
    np.testing.assert_allclose(out, a.sum(axis=1), **F32_SUM)


def test_cross_warp_step_goes_through_shared_memory():
    func = _only('a: R.Tensor((3, 100), "float32")', "R.max(a, axis=[1])")
    assert len(_shared_allocations(func)) == 1 and _calls(func, "tir.tvm_storage_sync")
    (a, _), (_, out) = _check(func)
    np.testing.assert_array_equal(out, a.max(axis=1))


@pytest.mark.parametrize("op,reference", [("R.max", np.max), ("R.min", np.min)])
def test_float16_max_min_are_exact(op, reference):
    func = _only('a: R.Tensor((5, 33), "float16")', f"{op}(a, axis=[1])")
    (a, _), (_, out) = _check(func)
    np.testing.assert_array_equal(out, reference(a, axis=1))


def test_float16_sum():
    func = _only('a: R.Tensor((5, 33), "float16")', "R.sum(a, axis=[1])")
    (a, _), (_, out) = _check(func, tolerance=F16)
    np.testing.assert_allclose(out.astype(np.float32), a.astype(np.float32).sum(axis=1), **F16)


@pytest.mark.parametrize("n", [1, 7])
def test_symbolic_rows_and_length(n):
    func = _only('a: R.Tensor((3, "n"), "float32")', "R.sum(a, axis=[1])")
    assert _rules(func) == ["row-reduction"]
    (a, _), (_, out) = _check(func, {"n": n}, tolerance=F32_SUM)
    np.testing.assert_allclose(out, a.sum(axis=1), **F32_SUM)


def test_reduction_of_everything_to_a_scalar():
    func = _only('a: R.Tensor((7, 13), "float32")', "R.sum(a)")
    (a, _), (_, out) = _check(func, tolerance=F32_SUM)
    np.testing.assert_allclose(out, a.sum(), **F32_SUM)


def test_mean():
    funcs = _kernels('a: R.Tensor((7, 13), "float32")', "R.mean(a, axis=[1])")
    (func,) = funcs.values()
    assert _rules(func) == ["row-reduction", "elementwise"]
    (a, _), (_, out) = _check(func, tolerance=F32_SUM)
    np.testing.assert_allclose(out, a.mean(axis=1), **F32_SUM)


def test_softmax():
    func = _only('a: R.Tensor((3, 100), "float32")', "R.nn.softmax(a, axis=-1)")
    assert _rules(func) == ["row-reduction", "elementwise", "elementwise", "row-reduction", "elementwise"]
    (a, _), (_, out) = _check(func, tolerance=F32_SUM)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), **F32_SUM)


def test_layer_norm():
    func = _only('a: R.Tensor((7, 33), "float32"), g: R.Tensor((33,), "float32"), b: R.Tensor((33,), "float32")',
                 "R.nn.layer_norm(a, g, b, axes=[-1])")
    assert _rules(func) == ["row-reduction", "row-reduction", "elementwise"]
    (a, g, b, _), (*_, out) = _check(func, tolerance=F32_SUM)
    mean, var = a.mean(axis=1, keepdims=True), a.var(axis=1, keepdims=True)
    np.testing.assert_allclose(out, (a - mean) / np.sqrt(var + 1e-5) * g + b, rtol=1e-3, atol=1e-3)


def test_rms_norm():
    func = _only('a: R.Tensor((7, 13), "float32"), g: R.Tensor((13,), "float32")', "R.nn.rms_norm(a, g, axes=[-1])")
    assert _rules(func)[0] == "row-reduction"
    (a, g, _), (*_, out) = _check(func, tolerance=F32_SUM)
    np.testing.assert_allclose(out, a / np.sqrt((a * a).mean(axis=1, keepdims=True) + 1e-5) * g,
                               rtol=1e-3, atol=1e-3)


# -- matmul ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("m,k,n", [(1, 7, 13), (33, 13, 7), (7, 33, 1), (100, 5, 3)])
def test_matmul_is_tiled_in_shared_memory(m, k, n):
    func = _only(f'a: R.Tensor(({m}, {k}), "float32"), b: R.Tensor(({k}, {n}), "float32")', "R.matmul(a, b)")
    assert _rules(func) == ["matmul"]
    assert len(_shared_allocations(func)) == 2
    (a, b, _), (_, _, out) = _check(func, tolerance=F32_SUM)
    np.testing.assert_allclose(out, a @ b, **F32_SUM)


def test_batched_matmul():
    func = _only('a: R.Tensor((2, 7, 13), "float32"), b: R.Tensor((2, 13, 5), "float32")', "R.matmul(a, b)")
    assert _rules(func) == ["matmul"]
    grid = {f.thread_tag: f.extent.value for f in collect(lower_for_codegen(func, TARGET).body, tir.For)
            if f.kind == "thread_binding"}
    assert grid == {"blockIdx.x": 2, "blockIdx.y": 1, "threadIdx.x": 16, "threadIdx.y": 16}  # batch in x
    (a, b, _), (_, _, out) = _check(func, tolerance=F32_SUM)
    np.testing.assert_allclose(out, a @ b, **F32_SUM)


def test_batched_matmul_with_several_column_tiles():
    func = _only('a: R.Tensor((3, 5, 2), "float32"), b: R.Tensor((3, 2, 65), "float32")', "R.matmul(a, b)")
    (a, b, _), (_, _, out) = _check(func, tolerance=F32_SUM)
    np.testing.assert_allclose(out, a @ b, **F32_SUM)


def test_symbolic_matmul():
    func = _only('a: R.Tensor(("m", 13), "float32"), b: R.Tensor((13, "n"), "float32")', "R.matmul(a, b)")
    assert _rules(func) == ["matmul"]
    (a, b, _), (_, _, out) = _check(func, {"m": 7, "n": 3}, tolerance=F32_SUM)
    np.testing.assert_allclose(out, a @ b, **F32_SUM)


def test_float16_matmul():
    func = _only('a: R.Tensor((7, 13), "float16"), b: R.Tensor((13, 5), "float16")', "R.matmul(a, b)")
    (a, b, _), (_, _, out) = _check(func, tolerance=F16)
    np.testing.assert_allclose(out.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), **F16)


def test_dense_with_bias_epilogue():
    """R.linear: B transposed in the matmul nest, then the bias add (an elementwise epilogue)."""
    func = _only('a: R.Tensor((7, 13), "float32"), w: R.Tensor((5, 13), "float32"), b: R.Tensor((5,), "float32")',
                 "R.linear(a, w, b)")
    assert _rules(func) == ["matmul", "elementwise"]
    (a, w, b, _), (*_, out) = _check(func, tolerance=F32_SUM)
    np.testing.assert_allclose(out, a @ w.T + b, **F32_SUM)


@pytest.mark.parametrize("tile", ["16x8x8", "8x2x8", "16x8x32", "16x8x16c", "8x2x8c"])
@pytest.mark.parametrize("m,k,n", [(33, 13, 7), (7, 40, 130)])
def test_matmul_tile_from_the_pass_config(tile, m, k, n):
    func = _only(f'a: R.Tensor(({m}, {k}), "float32"), b: R.Tensor(({k}, {n}), "float32")', "R.matmul(a, b)")
    side, reg, k_step = (int(part) for part in tile.removesuffix("c").split("x"))
    a_pad = 4 * k_step if tile.endswith("c") else 0  # the transposed A tile's padding
    with PassContext(config={TILE_KEY: tile}):
        lowered = lower_for_codegen(func, TARGET)
    # numpy is the reference here: the interpreter's (as in _check) would take seconds per tile
    a, b, out = _arrays(func, {})
    simulate(lowered, a, b, out)
    np.testing.assert_allclose(out, a @ b, **F32_SUM)
    threads = {f.thread_tag: f.extent.value for f in collect(lowered.body, tir.For) if f.kind == "thread_binding"}
    assert (threads["threadIdx.x"], threads["threadIdx.y"]) == (side, side)
    assert threads["blockIdx.y"] == -(-m // (side * reg))
    assert [np.prod([e.value for e in a.extents]) for a in _shared_allocations_of(lowered)] == \
        [side * reg * k_step + a_pad, side * reg * k_step]


@pytest.mark.parametrize("shape, outputs_per_block, k_step", [((2048, 64, 2048), 128, 32), ((2047, 64, 2048), 64, 16),
                                                              (("m", 64, 4096), 64, 16)])
def test_matmul_tile_by_size(shape, outputs_per_block, k_step):
    """Without the config, a static output of 2048 x 2048 or more gets 128 x 128 blocks, a
    smaller or symbolic one 64 x 64; either way a thread's outputs are adjacent, A is transposed
    in shared memory (rows padded by 4) and the kk loop is unrolled."""
    m, k, n = (f'"{d}"' if isinstance(d, str) else d for d in shape)
    func = _only(f'a: R.Tensor(({m}, {k}), "float32"), b: R.Tensor(({k}, {n}), "float32")', "R.matmul(a, b)")
    lowered = lower_for_codegen(func, TARGET)
    grid = {f.thread_tag: f.extent for f in collect(lowered.body, tir.For) if f.kind == "thread_binding"}
    assert grid["threadIdx.x"].value == grid["threadIdx.y"].value == 16
    assert [np.prod([e.value for e in a.extents]) for a in _shared_allocations_of(lowered)] == \
        [(outputs_per_block + 4) * k_step, outputs_per_block * k_step]
    assert [f.kind for f in collect(lowered.body, tir.For) if f.loop_var.name.endswith("_kk")] == ["unrolled"]


def _shared_allocations_of(lowered) -> list:
    return [a for a in collect(lowered.body, tir.Allocate) if a.scope == "shared"]


@pytest.mark.parametrize("text", ["16x4", "16x5x3", "axbxc", "16x0x16"])
def test_bad_matmul_tile_is_a_user_error(text):
    func = _only('a: R.Tensor((7, 13), "float32"), b: R.Tensor((13, 5), "float32")', "R.matmul(a, b)")
    with PassContext(config={TILE_KEY: text}), pytest.raises(UserError, match=f"{TILE_KEY}.*got '{text}'"):
        lower_for_codegen(func, TARGET)


def test_matmul_tile_past_shared_memory_leaves_the_rule():
    func = _only('a: R.Tensor((7, 13), "float32"), b: R.Tensor((13, 5), "float32")', "R.matmul(a, b)")
    statements, _ = top_level(func.body)
    assert choose_rule(statements[0], GpuOptions(256, MatmulTile(16, 8, 64))) != "matmul"  # 2 x 32 KiB
    assert choose_rule(statements[0], GpuOptions(256, MatmulTile(16, 8, 32))) == "matmul"


# -- dispatcher -----------------------------------------------------------------------------------

def test_config_switch_keeps_the_fallback():
    func = _only('a: R.Tensor((3, 100), "float32")', "R.sum(a, axis=[1])")
    with PassContext(config={CONFIG_KEY: "0"}):
        plain = lower_for_codegen(func, TARGET)
    assert not [c for c in collect(plain.body, tir.Call) if c.op.startswith("tir.tvm_")]
    assert _calls(func, "tir.tvm_warp_shuffle_down")


def test_small_thread_limit_falls_back():
    """Fewer threads than a warp (or than a 16 x 16 matmul block): the rules step aside."""
    func = _only('a: R.Tensor((7, 13), "float32"), b: R.Tensor((13, 5), "float32")', "R.matmul(a, b)")
    assert _rules(func) == ["matmul"]
    statements, _ = top_level(func.body)
    assert choose_rule(statements[0], GpuOptions(16)) == "fallback"
    scheduled = GPUSchedule(16, rules=True).run(func)
    assert not [c for c in collect(scheduled.body, tir.Call) if c.op.startswith("tir.tvm_")]


def test_already_bound_functions_are_left_alone():
    func = _only('a: R.Tensor((7, 13), "float32")', "R.exp(a)")
    once = GPUSchedule(256, rules=True).run(func)
    assert GPUSchedule(256, rules=True).run(once) is once


# -- CUDA C (H1's codegen) -----------------------------------------------------------------------

@pytest.mark.nvrtc
@pytest.mark.parametrize("params,body", [
    ('a: R.Tensor((3, 100), "float32")', "R.nn.softmax(a, axis=-1)"),
    ('a: R.Tensor((5, 33), "float16")', "R.sum(a, axis=[1])"),
    ('a: R.Tensor(("m", 13), "float16"), b: R.Tensor((13, "n"), "float16")', "R.matmul(a, b)"),
    ('a: R.Tensor((2, 7, 13), "float32"), b: R.Tensor((2, 13, 5), "float32")', "R.matmul(a, b)"),
    ('a: R.Tensor(("n", 7), "float32"), w: R.Tensor((5, 7), "float32"), b: R.Tensor((5,), "float32")',
     "R.linear(a, w, b)"),
])
def test_scheduled_kernels_compile_with_nvrtc(params, body):
    from relax.codegen.cuda import build_cuda_kernel_object, emit_cuda_source

    funcs = _kernels(params, body)
    source = emit_cuda_source(funcs, "cuda -arch=sm_90")
    assert "__shared__" in source and ("__syncthreads()" in source)
    assert build_cuda_kernel_object(funcs, ["cuda -arch=sm_80", "cuda -arch=sm_90"])[:4]


def test_fused_linear_relu_at_o2():
    """FuseTIR puts the matmul, the bias add and the relu in one PrimFunc: three launches."""
    text = """
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((7, 13), "float32"), w: R.Tensor((5, 13), "float32"), b: R.Tensor((5,), "float32")):
        with R.dataflow():
            y = R.linear(a, w, b)
            out = R.nn.relu(y)
            R.output(out)
        return out
"""
    (func,) = [f for n, f in lower(parse(text), 2).prim_funcs().items() if "shape_func" not in n]
    assert _rules(func) == ["matmul", "elementwise", "elementwise"]
    (a, w, b, _), (*_, out) = _check(func, tolerance=F32_SUM)
    np.testing.assert_allclose(out, np.maximum(a @ w.T + b, 0), **F32_SUM)
