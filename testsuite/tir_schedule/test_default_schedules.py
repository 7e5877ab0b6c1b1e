"""Default CPU schedules (relax.tir.schedule): scheduled kernels compute what the plain nests do.

Each case legalizes (and at -O2 fuses) a small Relax function, builds its kernels
unscheduled (-O0) and scheduled (-O2), runs both on the same random data and
compares them with each other and with numpy. Tolerance: rtol 1e-4, atol 1e-4
(float32 sums of up to 1023 terms; the schedules keep each element's order of
terms, LLVM's reassociation may differ between the two builds).
"""

import numpy as np
import pytest

from relax.codegen.build_kernels import build_host_library
from relax.ir import tir
from relax.tir.rewrite import collect
from relax.tir.schedule import CONFIG_KEY, default_cpu_schedule, schedule_for_codegen
from relax.ir.pass_infra import PassContext

from dataflow_kernels import lowered_kernels
from tile_calls import fma_calls

TOLERANCE = dict(rtol=1e-4, atol=1e-4)


def _module(params: str, body: str, level: int = 0):
    return lowered_kernels(params, body, level)


def _arrays(func, sizes: dict, rng):
    arrays = []
    for _, buffer in func.buffer_map:
        shape = tuple(d.value if isinstance(d, tir.IntImm) else sizes[d.name] for d in buffer.shape)
        arrays.append(rng.standard_normal(shape).astype(buffer.dtype))
    return arrays


def _run_both(funcs: dict, sizes=None, seed=0, target=None):
    """{kernel: (plain outputs, scheduled outputs)} on the same random inputs."""
    with PassContext(opt_level=0):
        plain = build_host_library(funcs)
    scheduled = build_host_library(funcs, target)
    results = {}
    for name, func in funcs.items():
        inputs = _arrays(func, sizes or {}, np.random.default_rng(seed))
        a, b = [x.copy() for x in inputs], [x.copy() for x in inputs]
        plain.get_function(name)(*a)
        scheduled.get_function(name)(*b)
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, **TOLERANCE)
        results[name] = (inputs, b)
    return results


def _only(results):
    (inputs, outputs), = results.values()
    return inputs, outputs


@pytest.mark.parametrize("m,k,n", [(1, 7, 13), (7, 13, 1), (13, 1, 7), (1023, 13, 300), (5, 1023, 257), (13, 513, 64)])
def test_matmul_matches_numpy(m, k, n, schedule_target):
    funcs = _module(f'a: R.Tensor(({m}, {k}), "float32"), b: R.Tensor(({k}, {n}), "float32")',
                    "out = R.matmul(a, b)")
    inputs, outputs = _only(_run_both(funcs, target=schedule_target))
    np.testing.assert_allclose(outputs[-1], inputs[0] @ inputs[1], **TOLERANCE)


def test_symbolic_matmul_matches_numpy(schedule_target):
    funcs = _module('a: R.Tensor(("n", 13), "float32"), b: R.Tensor((13, "m"), "float32")',
                    "out = R.matmul(a, b)")
    for n, m in [(1, 1), (7, 300), (13, 513)]:
        inputs, outputs = _only(_run_both(funcs, {"n": n, "m": m}, target=schedule_target))
        np.testing.assert_allclose(outputs[-1], inputs[0] @ inputs[1], **TOLERANCE)


def test_batched_matmul_matches_numpy(schedule_target):
    funcs = _module('a: R.Tensor((3, 7, 13), "float32"), b: R.Tensor((3, 13, 300), "float32")',
                    "out = R.matmul(a, b)")
    inputs, outputs = _only(_run_both(funcs, target=schedule_target))
    np.testing.assert_allclose(outputs[-1], inputs[0] @ inputs[1], **TOLERANCE)


def test_fused_matmul_bias_relu_matches_numpy(schedule_target):
    funcs = _module('x: R.Tensor((7, 300), "float32"), w: R.Tensor((300, 13), "float32"), '
                    'bias: R.Tensor((13,), "float32")',
                    "lv = R.matmul(x, w)\n            lv1 = R.add(lv, bias)\n            out = R.nn.relu(lv1)",
                    level=2)
    (name, (inputs, outputs)), = _run_both(funcs, target=schedule_target).items()
    x, w, bias = inputs[:3]
    np.testing.assert_allclose(outputs[-1], np.maximum(x @ w + bias, 0), **TOLERANCE)


@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (13, 1023)])
def test_row_sum_and_max_match_numpy(shape, schedule_target):
    params = f'x: R.Tensor({shape}, "float32")'
    sums = _only(_run_both(_module(params, "out = R.sum(x, axis=[-1])"), target=schedule_target))
    np.testing.assert_allclose(sums[1][-1], sums[0][0].sum(axis=-1), **TOLERANCE)
    maxima = _only(_run_both(_module(params, "out = R.max(x, axis=[-1])"), target=schedule_target))
    np.testing.assert_allclose(maxima[1][-1], maxima[0][0].max(axis=-1), **TOLERANCE)


def test_column_sum_matches_numpy(schedule_target):
    inputs, outputs = _only(_run_both(_module('x: R.Tensor((13, 300), "float32")', "out = R.sum(x, axis=[0])"), target=schedule_target))
    np.testing.assert_allclose(outputs[-1], inputs[0].sum(axis=0), **TOLERANCE)


def test_softmax_and_layer_norm_agree_with_plain_nests(schedule_target):
    _run_both(_module('x: R.Tensor((7, 1023), "float32")', "out = R.nn.softmax(x, axis=-1)", level=2), target=schedule_target)
    _run_both(_module('x: R.Tensor((13, 300), "float32"), g: R.Tensor((300,), "float32"), '
                      'b: R.Tensor((300,), "float32")',
                      "out = R.nn.layer_norm(x, g, b, axes=[-1])", level=2), target=schedule_target)


def test_big_elementwise_is_parallel_and_correct(schedule_target):
    funcs = _module('a: R.Tensor((1023, 1023), "float32"), b: R.Tensor((1023, 1023), "float32")',
                    "out = R.add(a, b)")
    (func,) = funcs.values()
    assert [loop.kind for loop in collect(default_cpu_schedule(func).body, tir.For)] == ["parallel", "serial"]
    inputs, outputs = _only(_run_both(funcs, target=schedule_target))
    np.testing.assert_allclose(outputs[-1], inputs[0] + inputs[1], **TOLERANCE)


def _matmul_loops(func):
    return [(loop.loop_var.name, loop.kind) for loop in collect(func.body, tir.For)]


def test_big_matmul_gets_a_parallel_register_tile():
    (func,) = _module('a: R.Tensor((1024, 1024), "float32"), b: R.Tensor((1024, 1024), "float32")',
                      "out = R.matmul(a, b)").values()
    scheduled = default_cpu_schedule(func)
    loops = _matmul_loops(scheduled)
    assert loops[0][1] == "parallel" and all(kind != "parallel" for _, kind in loops[1:])
    # 1024 rows, 2 vectors wide (AVX2, SSE): 171 tiles of 6, the last one overlapping (169 of 6 and 2 of 5 in a
    # kernel whose tiles may not be computed twice); or 256 tiles of 4 x 4 vectors (AVX-512, NEON)
    assert len(fma_calls(scheduled.body)) in ((6 + 5) * 2, 6 * 2, 4 * 4)
    assert all(not loop.annotations for loop in collect(scheduled.body, tir.For))


def test_symbolic_matmul_runs_j_innermost_in_tiles():
    (func,) = _module('a: R.Tensor(("n", 1024), "float32"), b: R.Tensor((1024, 1024), "float32")',
                      "out = R.matmul(a, b)").values()
    names = [name for name, _ in _matmul_loops(default_cpu_schedule(func))]
    assert names[-1] == "i1_inner" and names.index("k_outer") < names.index("k_inner")


@pytest.mark.parametrize("level", ["x86-64-v3", "x86-64-v4"])
def test_register_tiles_for_both_register_files(monkeypatch, level):
    import relax.tir.schedule as schedule
    from relax.tir.schedule.cpu import CpuInfo

    monkeypatch.setattr(schedule, "cpu_info", lambda target: CpuInfo.for_level(level))
    funcs = _module('a: R.Tensor((13, 1023), "float32"), b: R.Tensor((1023, 257), "float32")',
                    "out = R.matmul(a, b)")
    inputs, outputs = _only(_run_both(funcs))
    np.testing.assert_allclose(outputs[-1], inputs[0] @ inputs[1], **TOLERANCE)


def test_small_kernels_stay_serial():
    (func,) = _module('a: R.Tensor((7, 13), "float32"), b: R.Tensor((13, 5), "float32")',
                      "out = R.matmul(a, b)").values()
    assert all(kind != "parallel" for _, kind in _matmul_loops(default_cpu_schedule(func)))


def test_opt_level_zero_and_config_key_leave_the_plain_nest():
    (func,) = _module('a: R.Tensor((7, 13), "float32"), b: R.Tensor((13, 5), "float32")',
                      "out = R.matmul(a, b)").values()
    with PassContext(opt_level=0):
        assert schedule_for_codegen(func) is func
    with PassContext(opt_level=2, config={CONFIG_KEY: "0"}):
        assert schedule_for_codegen(func) is func
    with PassContext(opt_level=1):
        assert schedule_for_codegen(func) is not func


def test_conv2d_agrees_with_plain_nest(schedule_target):
    _run_both(_module('x: R.Tensor((1, 3, 13, 13), "float32"), w: R.Tensor((5, 3, 3, 3), "float32")',
                      "out = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])", level=2), target=schedule_target)


def test_batched_matmul_with_broadcast_weight_matches_numpy(schedule_target):
    funcs = _module('a: R.Tensor((2, 13, 40), "float32"), b: R.Tensor((40, 33), "float32")', "out = R.matmul(a, b)")
    inputs, outputs = _only(_run_both(funcs, target=schedule_target))
    np.testing.assert_allclose(outputs[-1], inputs[0] @ inputs[1], **TOLERANCE)
