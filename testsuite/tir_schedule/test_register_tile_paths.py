"""The register-tile rule's shape paths (relax.tir.schedule.register_tile) against the plain nests and numpy.

Each case legalizes and fuses (-O2) a float32 matmul, alone, batched or followed by a
bias add and relu, builds its kernels unscheduled (-O0) and scheduled, runs both on
the same random data and compares them with each other and with numpy (float64).
The paths: full 8 x 32 (4 x 32 without AVX-512) tiles in parallel column chunks with
packed B panels, the last rows as one smaller tile, the last columns (or a
matrix narrower than one tile) as 16-lane tiles over a zero-padded panel, a symbolic
K (blocks of K_PANEL, the last one shorter), and the blocking constants made small so
that small matrices cross every chunk, row-block and k-block boundary, partial ones
included. The rule claims float32 only: a float64 matmul keeps another path and
stays correct. Tolerance: rtol 1e-4, atol 1e-4 (float32 sums of up to 1023 terms;
the tiles round each multiply-add once, the plain nest twice).
"""

import numpy as np
import pytest

import relax.tir.schedule as schedule
from relax.codegen.build_kernels import build_host_library
from relax.ir import tir
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import default_cpu_schedule, register_tile
from relax.tir.schedule.cpu import CpuInfo
from relax.tir.schedule.nest import match_nest
from relax.ir.pass_infra import PassContext

from dataflow_kernels import lowered_kernels

TOLERANCE = dict(rtol=1e-4, atol=1e-4)


def _funcs(m, k, n, dtype="float32", epilogue=False, batch=()):
    params = (f'a: R.Tensor({(*batch, m, k)}, "{dtype}"), b: R.Tensor({(*batch, k, n)}, "{dtype}"), '
              f'c: R.Tensor(({n},), "{dtype}")')
    if epilogue:
        body = "y = R.matmul(a, b)\n            z = R.add(y, c)\n            out = R.nn.relu(z)"
    else:
        body = "out = R.matmul(a, b)"
    return lowered_kernels(params, body, 2)


def _run(funcs: dict, a, b, c, epilogue: bool, target=None) -> np.ndarray:
    """The kernel run plain and scheduled on (a, b[, c]); checks they agree and returns the scheduled output."""
    (name, func), = funcs.items()
    with PassContext(opt_level=0):
        plain = build_host_library(funcs)
    scheduled = build_host_library(funcs, target)
    out_buffer = func.buffer_map[-1][1]
    shape = tuple(d.value if isinstance(d, tir.IntImm) else a.shape[-1] for d in out_buffer.shape)
    outputs = []
    for library in (plain, scheduled):
        out = np.full(shape, np.nan, out_buffer.dtype)
        inputs = (a, b, c) if epilogue else (a, b)
        library.get_function(name)(*inputs, out)
        outputs.append(out)
    np.testing.assert_allclose(outputs[0], outputs[1], **TOLERANCE)
    return outputs[1]


def _check(m, k, n, epilogue=False, batch=(), dtype="float32", target=None):
    rng = np.random.default_rng(m * 7919 + k * 31 + n)
    a = rng.standard_normal((*batch, m, k)).astype(dtype)
    b = rng.standard_normal((*batch, k, n)).astype(dtype)
    c = rng.standard_normal(n).astype(dtype)
    out = _run(_funcs(m, k, n, dtype, epilogue, batch), a, b, c, epilogue, target=target)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue:
        expected = np.maximum(expected + c, 0)
    np.testing.assert_allclose(out, expected, **TOLERANCE)


def _scheduled_matmul(m, k, n, wide=True):
    """The matmul nest of (m x k) @ (k x n), scheduled by the register-tile rule."""
    (func,) = lowered_kernels(f'a: R.Tensor(({m}, {k}), "float32"), b: R.Tensor(({k}, {n}), "float32")',
                              "out = R.matmul(a, b)", 2).values()
    nest = next(n for n in map(match_nest, top_level(func.body)[0]) if n is not None)
    cpu = CpuInfo(wide_registers=wide)
    assert register_tile.matches(nest, cpu)
    return register_tile.apply(nest, cpu)


@pytest.mark.parametrize("m", [1, 7, 13, 1023])
@pytest.mark.parametrize("k,n", [(1, 32), (13, 45), (7, 1023), (300, 70)])
def test_matmul_matches_numpy(m, k, n, schedule_target):
    if m * k * n > 4_000_000:
        pytest.skip("covered by smaller shapes")
    _check(m, k, n, target=schedule_target)


@pytest.mark.parametrize("m,k,n", [(64, 784, 10), (13, 7, 1), (7, 1023, 13), (1023, 13, 31), (9, 20, 17)])
def test_narrower_than_one_tile_matches_numpy(m, k, n, schedule_target):
    _check(m, k, n, target=schedule_target)


@pytest.mark.parametrize("m,k,n", [(64, 784, 512), (13, 1023, 75), (1023, 7, 33)])
def test_bias_relu_epilogue_matches_numpy(m, k, n, schedule_target):
    _check(m, k, n, epilogue=True, target=schedule_target)


def test_batched_matmul_matches_numpy(schedule_target):
    _check(13, 30, 70, batch=(3,), target=schedule_target)


def test_symbolic_k_matches_numpy(schedule_target):
    funcs = lowered_kernels('a: R.Tensor((13, "k"), "float32"), b: R.Tensor(("k", 45), "float32")',
                            "out = R.matmul(a, b)", 2)
    rng = np.random.default_rng(3)
    for k in (0, 1, 300, 600):
        a, b = rng.standard_normal((13, k)).astype("float32"), rng.standard_normal((k, 45)).astype("float32")
        (name, func), = funcs.items()
        with PassContext(opt_level=0):
            plain = build_host_library(funcs)
        outputs = []
        for library in (plain, build_host_library(funcs, schedule_target)):
            out = np.full((13, 45), np.nan, "float32")
            library.get_function(name)(a, b, out)
            outputs.append(out)
        if k == 0:  # the plain nest never runs its block (C unwritten); the schedule initializes C first
            np.testing.assert_array_equal(outputs[1], np.zeros((13, 45), "float32"))
            continue
        np.testing.assert_allclose(outputs[0], outputs[1], **TOLERANCE)
        np.testing.assert_allclose(outputs[1], a.astype(np.float64) @ b, **TOLERANCE)


@pytest.mark.parametrize("wide", [False, True])
def test_every_block_boundary_crossed(monkeypatch, wide):
    """Tiny blocking constants: partial column chunks, row blocks and k blocks on a small matmul."""
    monkeypatch.setattr(schedule, "cpu_info", lambda target: CpuInfo(wide_registers=wide))
    monkeypatch.setattr(register_tile, "K_PANEL", 16)
    monkeypatch.setattr(register_tile, "CHUNK_TILES", 2)
    monkeypatch.setattr(register_tile, "ROW_BLOCK_TILES", 3)
    _check(8 * 13 + 5, 50, 32 * 5 + 7)
    _check(8 * 13 + 5, 50, 32 * 5 + 7, epilogue=True)


def test_float64_is_not_claimed_and_stays_correct(schedule_target):
    (func,) = lowered_kernels('a: R.Tensor((64, 64), "float64"), b: R.Tensor((64, 64), "float64")',
                              "out = R.matmul(a, b)", 2).values()
    nest = next(n for n in map(match_nest, top_level(func.body)[0]) if n is not None)
    assert not register_tile.matches(nest, CpuInfo(wide_registers=True))
    _check(13, 64, 40, dtype="float64", target=schedule_target)


def _fma_count(stmt) -> int:
    return sum(call.op == "tir.fma" for call in collect(stmt, tir.Call))


def test_last_rows_take_a_smaller_register_tile():
    # 13 rows: one 8-row tile (16 fma) and one 5-row tile (10 fma), no scalar row loop.
    stmt = _scheduled_matmul(13, 64, 64)
    assert _fma_count(stmt) == 8 * 2 + 5 * 2
    assert not any("rest" in loop.loop_var.name for loop in collect(stmt, tir.For))


def test_narrow_columns_take_sixteen_lane_tiles():
    # 64 x 10: only narrow tiles, one 16-lane vector per row of 8 (one fma each), no scalar loops.
    stmt = _scheduled_matmul(64, 512, 10)
    assert _fma_count(stmt) == 8
    assert not any("rest" in loop.loop_var.name for loop in collect(stmt, tir.For))
    # 70 columns: two full 32-wide tiles, then 6 columns in one 16-lane vector per row.
    assert _fma_count(_scheduled_matmul(64, 512, 70)) == 8 * 2 + 8


def test_column_chunks_run_in_parallel_over_equal_k_blocks():
    (func,) = lowered_kernels('a: R.Tensor((64, 784), "float32"), b: R.Tensor((784, 512), "float32")',
                              "out = R.matmul(a, b)", 2).values()
    scheduled = default_cpu_schedule(func)
    loops = list(collect(scheduled.body, tir.For))
    parallel = [loop for loop in loops if loop.kind == "parallel"]
    assert len(parallel) == 1 and parallel[0].extent.value >= register_tile.MIN_CHUNKS
    k_blocks = [loop for loop in loops if loop.loop_var.name.endswith("_outer")]
    assert k_blocks and k_blocks[0].extent.value == 4  # 784 = 4 x 196
    buffers = {alloc.buffer_var.name for alloc in collect(scheduled.body, tir.Allocate)}
    assert any(name.endswith("_panel") for name in buffers)  # B packed per column tile and k block


def test_bias_relu_applied_to_the_tiles_in_registers():
    """The epilogue nest goes: the last k block stores max(acc + bias, 0) from the registers."""
    (func,) = _funcs(64, 784, 512, epilogue=True).values()
    scheduled = default_cpu_schedule(func)
    assert len(top_level(scheduled.body)[0]) == 1  # one statement: the tiles, no pass over C after
    (branch,) = [s for s in collect(scheduled.body, tir.IfThenElse) if collect(s.then_case, tir.Max)]
    assert branch.condition.b.value == 3  # 784 = 4 k blocks of 196: the last one finishes


def _has_erf(stmt) -> bool:
    return any(call.op == "tir.erf" for call in collect(stmt, tir.Call))


def test_gelu_epilogue_stays_a_nest_and_matches_numpy(schedule_target):
    """Stages with calls (GELU's erf) are not written into every tile slot: the nest follows the tiles."""
    from math import erf

    params = 'a: R.Tensor((37, 256), "float32"), b: R.Tensor((256, 96), "float32"), c: R.Tensor((96,), "float32")'
    funcs = lowered_kernels(params, "y = R.matmul(a, b)\n            z = R.add(y, c)\n            out = R.nn.gelu(z)", 2)
    ((name, func),) = funcs.items()
    statements = top_level(default_cpu_schedule(func).body)[0]
    assert not any(_has_erf(s) for s in statements if _fma_count(s)) and _has_erf(statements[-1])
    rng = np.random.default_rng(11)
    a, b, c = (rng.standard_normal(s).astype("float32") for s in ((37, 256), (256, 96), (96,)))
    with PassContext(opt_level=0):
        plain = build_host_library(funcs)
    outputs = []
    for library in (plain, build_host_library(funcs, schedule_target)):
        out = np.full((37, 96), np.nan, "float32")
        library.get_function(name)(a, b, c, out)
        outputs.append(out)
    z = a.astype(np.float64) @ b + c
    expected = 0.5 * z * (1 + np.vectorize(erf)(z / np.sqrt(2)))
    np.testing.assert_allclose(outputs[0], outputs[1], **TOLERANCE)
    np.testing.assert_allclose(outputs[1], expected, **TOLERANCE)
