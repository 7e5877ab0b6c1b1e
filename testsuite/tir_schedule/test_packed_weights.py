"""Weights in the panel layout (relax.tir.schedule.packed_weights) read by the register-tile rule.

Each case legalizes and fuses (-O2) a float32 matmul (alone, batched over A, or with a
bias add and relu), rewrites its kernel to read B packed (read_packed), builds it
unscheduled (-O0) and scheduled, runs both on B laid out by pack_array, and compares
them with each other and with numpy (float64). The original kernel on the original B
gives the same result as the packed kernel on the packed B.
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
from relax.tir.schedule.packed_weights import PANEL_WIDTH, STRIP_WIDTH, pack_array, packable_params, packed_shape, read_packed
from relax.ir.pass_infra import PassContext

from dataflow_kernels import lowered_kernels

TOLERANCE = dict(rtol=1e-4, atol=1e-4)


def _kernel(m, k, n, epilogue=False, batch=(), dtype="float32"):
    params = f'a: R.Tensor({(*batch, m, k)}, "{dtype}"), b: R.Tensor(({k}, {n}), "{dtype}"), c: R.Tensor(({n},), "{dtype}")'
    body = ("y = R.matmul(a, b)\n            z = R.add(y, c)\n            out = R.nn.relu(z)" if epilogue
            else "out = R.matmul(a, b)")
    ((name, func),) = lowered_kernels(params, body, 2).items()
    return name, func


def _run(name, func, inputs, out_shape, opt_level, target=None):
    with PassContext(opt_level=opt_level):
        library = build_host_library({name: func}, target)
    out = np.full(out_shape, np.nan, "float32")
    library.get_function(name)(*inputs, out)
    return out


def _check(m, k, n, epilogue=False, batch=(), width=PANEL_WIDTH, target=None):
    name, func = _kernel(m, k, n, epilogue, batch)
    assert packable_params(func) == {1: width}
    packed = read_packed(func, {1: width})
    rng = np.random.default_rng(m * 7919 + k * 31 + n)
    a = rng.standard_normal((*batch, m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    c = rng.standard_normal(n).astype("float32")
    inputs = (a, pack_array(b, width), c) if epilogue else (a, pack_array(b, width))
    plain = _run(name, packed, inputs, (*batch, m, n), 0)  # the reference: plain loops, this host
    scheduled = _run(name, packed, inputs, (*batch, m, n), 2, target=target)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue:
        expected = np.maximum(expected + c, 0)
    np.testing.assert_allclose(plain, expected, **TOLERANCE)
    np.testing.assert_allclose(scheduled, expected, **TOLERANCE)
    original = _run(name, func, (a, b, c) if epilogue else (a, b), (*batch, m, n), 2, target=target)
    np.testing.assert_allclose(scheduled, original, **TOLERANCE)


def test_pack_array_is_panel_major():
    b = np.arange(5 * 64, dtype="float32").reshape(5, 64)
    packed = pack_array(b)
    assert packed.shape == packed_shape(b.shape) == (2, 5, 32) and packed.flags.c_contiguous
    for k in range(5):
        for j in range(64):
            assert packed[j // PANEL_WIDTH, k, j % PANEL_WIDTH] == b[k, j]


@pytest.mark.parametrize("m", [2, 7, 13, 1023])
@pytest.mark.parametrize("k,n", [(1, 32), (13, 64), (300, 96), (7, 1024)])
def test_packed_matmul_matches_numpy(m, k, n, schedule_target):
    if m * k * n > 4_000_000:
        pytest.skip("covered by smaller shapes")
    _check(m, k, n, target=schedule_target)


@pytest.mark.parametrize("m,k,n", [(64, 784, 512), (13, 1023, 64)])
def test_packed_with_bias_relu_matches_numpy(m, k, n, schedule_target):
    _check(m, k, n, epilogue=True, target=schedule_target)


def test_packed_batched_a_matches_numpy(schedule_target):
    _check(13, 30, 64, batch=(3,), target=schedule_target)


@pytest.mark.parametrize("wide", [False, True])
def test_packed_every_block_boundary_crossed(monkeypatch, wide):
    monkeypatch.setattr(schedule, "cpu_info", lambda target: CpuInfo(wide_registers=wide))
    monkeypatch.setattr(register_tile, "K_PANEL", 16)
    monkeypatch.setattr(register_tile, "CHUNK_TILES", 2)
    monkeypatch.setattr(register_tile, "ROW_BLOCK_TILES", 3)
    _check(8 * 13 + 5, 50, 32 * 5)
    _check(8 * 13 + 5, 50, 32 * 5, epilogue=True)


def test_scheduled_packed_kernel_copies_no_panel():
    name, func = _kernel(64, 784, 512)
    plain = default_cpu_schedule(func)
    packed = default_cpu_schedule(read_packed(func, {1: PANEL_WIDTH}))
    panels = lambda f: [a for a in collect(f.body, tir.Allocate) if a.buffer_var.name.endswith("_panel")]  # noqa: E731
    assert panels(plain) and not panels(packed)
    fmas = [call for call in collect(packed.body, tir.Call) if call.op == "tir.fma"]
    assert len(fmas) == len([call for call in collect(plain.body, tir.Call) if call.op == "tir.fma"]) > 0
    nest = next(n for n in map(match_nest, top_level(read_packed(func, {1: PANEL_WIDTH}).body)[0]) if n is not None)
    assert register_tile.matches(nest, CpuInfo(wide_registers=True))


@pytest.mark.parametrize("m,k,n,why", [
    (1, 512, 256, "a gemv of one strip: its threads split K, not the columns"),
    (1, 512, 520, "a gemv with a ragged last strip"),
    (64, 512, 10, "10 columns: no whole panel"),
    (64, 512, 70, "70 columns: a ragged last panel"),
])
def test_not_packable(m, k, n, why):
    name, func = _kernel(m, k, n)
    assert packable_params(func) == {}, why


def test_float64_not_packable():
    name, func = _kernel(13, 64, 64, dtype="float64")
    assert packable_params(func) == {}


def test_b_read_twice_not_packable():
    kernels = lowered_kernels('a: R.Tensor((64, 64), "float32"), b: R.Tensor((64, 64), "float32")',
                              "y = R.matmul(a, b)\n            out = R.add(y, b)", 2)
    (func,) = [f for f in kernels.values() if len(f.params) == 3]
    assert packable_params(func) == {}


@pytest.mark.parametrize("k", [1, 7, 13, 1023])
@pytest.mark.parametrize("n", [512, 768])
def test_gemv_strips_packed_match_numpy(k, n, schedule_target):
    _check(1, k, n, width=STRIP_WIDTH, target=schedule_target)


def test_gemv_strips_packed_with_bias_relu_match_numpy(schedule_target):
    _check(1, 784, 512, epilogue=True, width=STRIP_WIDTH, target=schedule_target)


@pytest.mark.parametrize("wide", [False, True])
def test_gemv_packed_keeps_column_strips(monkeypatch, wide):
    """A packed gemv weight is read a strip (a contiguous panel) per thread, never split by rows."""
    monkeypatch.setattr(schedule, "cpu_info", lambda target: CpuInfo(wide_registers=wide))
    name, func = _kernel(1, 784, 512)
    plain = default_cpu_schedule(func)
    packed = default_cpu_schedule(read_packed(func, {1: STRIP_WIDTH}))
    partials = lambda f: [a for a in collect(f.body, tir.Allocate) if a.buffer_var.name.endswith("_partial")]  # noqa: E731
    assert len(partials(plain)) == 1 and not partials(packed)
    assert [loop.kind for loop in collect(packed.body, tir.For) if loop.kind == "parallel"] == ["parallel"]
    _check(1, 784, 512, width=STRIP_WIDTH)
