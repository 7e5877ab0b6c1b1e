"""The gemv schedule rule (relax.tir.schedule.gemv): matrix-vector kernels compute what the plain nests do.

Each case legalizes and fuses (-O2) a (1 x K) @ (K x N) product, alone or followed by a
bias add and relu, or with the weight given as (N x K) and transposed, builds the kernels
unscheduled (-O0) and scheduled, runs both on the same random data and compares them with
each other and with numpy (float64). Tolerance: rtol 1e-4, atol 1e-4 (float32 sums of up
to 2048 terms; the schedule uses fused multiply-adds, the plain nest does not).
"""

import numpy as np
import pytest

from relax.codegen.build_kernels import build_host_library
from relax.ir import tir
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import default_cpu_schedule, gemv
from relax.tir.schedule.cpu import CpuInfo
from relax.tir.schedule.nest import match_nest
from relax.transform.pass_infra import PassContext

from dataflow_kernels import lowered_kernels

TOLERANCE = dict(rtol=1e-4, atol=1e-4)
SIZES = [(1, 1), (7, 13), (13, 7), (1023, 17), (13, 1023), (784, 512), (512, 10), (2048, 10), (33, 130)]


def _kernels(params: str, body: str) -> dict:
    return lowered_kernels(params, body, 2)


def _module(k, n, epilogue, transposed=False, rows=(1,)):
    weight = (n, k) if transposed else (k, n)
    params = (f'x: R.Tensor({(*rows, k)}, "float32"), w: R.Tensor({weight}, "float32"), '
              f'b: R.Tensor(({n},), "float32")')
    product = "R.matmul(x, R.permute_dims(w))" if transposed else "R.matmul(x, w)"
    if epilogue:
        body = f"y = {product}\n            z = R.add(y, b)\n            out = R.nn.relu(z)"
    else:
        body = f"out = {product}"
    return _kernels(params, body)


def _inputs(k, n, transposed, rows=(1,)):
    """Random x, w and b."""
    rng = np.random.default_rng(k * 7919 + n)
    x = rng.standard_normal((*rows, k)).astype("float32")
    w = rng.standard_normal((n, k) if transposed else (k, n)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    return x, w, b


def _chain(funcs: dict, x, w, b) -> np.ndarray:
    """The kernels called in order (arguments matched by shape, newest first), plain and scheduled; the last output."""
    with PassContext(opt_level=0):
        plain = build_host_library(funcs)
    scheduled = build_host_library(funcs)
    outputs = []
    for library in (plain, scheduled):
        available = [x, w, b]
        for name, func in funcs.items():
            args = []
            pool = list(available)
            for _, buffer in func.buffer_map[:-1]:
                shape = tuple(d.value for d in buffer.shape)
                match = next(i for i, a in enumerate(pool) if a.shape == shape)
                args.append(pool.pop(match))
            out_buffer = func.buffer_map[-1][1]
            out = np.zeros(tuple(d.value for d in out_buffer.shape), out_buffer.dtype)
            library.get_function(name)(*args, out)
            available = [out, *available]  # a later kernel reads this one's output
        outputs.append(out)
    np.testing.assert_allclose(outputs[0], outputs[1], **TOLERANCE)
    return outputs[1]


@pytest.mark.parametrize("epilogue", [False, True])
@pytest.mark.parametrize("k,n", SIZES)
def test_gemv_matches_numpy(k, n, epilogue):
    funcs = _module(k, n, epilogue)
    x, w, b = _inputs(k, n, False)
    out = _chain(funcs, x, w, b)
    expected = x.astype(np.float64) @ w.astype(np.float64)
    if epilogue:
        expected = np.maximum(expected + b, 0)
    np.testing.assert_allclose(out, expected, **TOLERANCE)


@pytest.mark.parametrize("k,n", [(13, 7), (784, 512), (2048, 10), (1023, 33)])
def test_transposed_weight_matches_numpy(k, n):
    funcs = _module(k, n, True, transposed=True)
    x, w, b = _inputs(k, n, True)
    out = _chain(funcs, x, w, b)
    expected = np.maximum(x.astype(np.float64) @ w.astype(np.float64).T + b, 0)
    np.testing.assert_allclose(out, expected, **TOLERANCE)


def test_batched_single_row_matches_numpy():
    funcs = _module(100, 70, False, rows=(3, 1))
    x, w, b = _inputs(100, 70, False, rows=(3, 1))
    out = _chain(funcs, x, w, b)
    np.testing.assert_allclose(out, x.astype(np.float64) @ w.astype(np.float64), **TOLERANCE)


def _matmul_nest(funcs: dict):
    for func in funcs.values():
        for stmt in top_level(func.body)[0]:
            nest = match_nest(stmt)
            if nest is not None and nest.iters("CommReduce"):
                return func, nest
    raise AssertionError("no reduction nest")


@pytest.mark.parametrize("wide,vectors", [(True, gemv.WIDE_VECTORS), (False, gemv.VECTORS)])
def test_rule_matches_one_row_and_uses_strips(wide, vectors):
    funcs = _module(784, 512, False)
    func, nest = _matmul_nest(funcs)
    cpu = CpuInfo(wide_registers=wide)
    assert gemv.matches(nest, cpu)
    stmt = gemv.apply(nest, cpu)
    fmas = [call for call in collect(stmt, tir.Call) if call.op == "tir.fma"]
    assert len(fmas) == vectors  # one strip of `vectors` accumulators per k step (512 columns divide evenly)
    strips = [loop for loop in collect(stmt, tir.For) if "strip" in loop.loop_var.name]
    assert [s.extent.value for s in strips] == [512 // (vectors * gemv.LANES)]


def test_rule_leaves_several_rows_and_narrow_outputs():
    _, nest = _matmul_nest(_kernels('x: R.Tensor((4, 64), "float32"), w: R.Tensor((64, 64), "float32")',
                                    "out = R.matmul(x, w)"))
    assert not gemv.matches(nest, CpuInfo())
    _, nest = _matmul_nest(_module(64, 10, False))
    assert not gemv.matches(nest, CpuInfo())


def test_default_schedule_picks_gemv_for_mlp_layer():
    func, _ = _matmul_nest(_module(784, 512, True))
    scheduled = default_cpu_schedule(func)
    assert any("strip" in loop.loop_var.name for loop in collect(scheduled.body, tir.For))
