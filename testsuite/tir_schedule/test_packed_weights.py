"""Weights in the panel layout (relax.tir.schedule.packed_weights) read by the register-tile rule.

Each case legalizes and fuses (-O2) a float32 matmul (alone, batched over A, or with a
bias add and relu), rewrites its kernel to read B packed (read_packed), builds it
unscheduled (-O0) and scheduled, runs both on B laid out by pack_array, and compares
them with each other and with numpy (float64). The original kernel on the original B
gives the same result as the packed kernel on the packed B. The widths are those of the
target's CPU model (register-tile panels as wide as its tile, gemv strips); a weight packed
for another target is read too.
"""

import numpy as np
import pytest

import relax.tir.schedule as schedule
from relax.codegen.build_kernels import build_host_library
from relax.ir import tir
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import default_cpu_schedule, register_tile
from relax.tir.schedule.cpu import CpuInfo, cpu_info
from relax.tir.schedule.nest import match_nest
from relax.tir.schedule.packed_weights import pack_array, packable_params, packed_shape, panel_width, read_packed, strip_width
from relax.tir.schedule.tile_shape import Blocking
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


AVX512 = CpuInfo.for_level("x86-64-v4")  # panels of 64 columns, strips of 256
AVX2 = CpuInfo.for_level("x86-64-v3")  # panels of 16, strips of 64


def _check(m, k, n, epilogue=False, batch=(), strips=False, target=None, packed_for=None):
    """The kernel on B packed for `packed_for` (a CpuInfo; by default the target's model) and
    built for `target`."""
    name, func = _kernel(m, k, n, epilogue, batch)
    cpu = packed_for or cpu_info(target)
    width = strip_width(cpu) if strips else panel_width(cpu)
    assert packable_params(func, cpu) == {1: width}
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


def test_widths_follow_the_cpu_model():
    assert (panel_width(AVX512), strip_width(AVX512)) == (64, 256)
    assert (panel_width(AVX2), strip_width(AVX2)) == (16, 64)
    assert (panel_width(CpuInfo.for_level("x86-64-v2")), strip_width(CpuInfo.for_level("x86-64-v2"))) == (8, 32)


def test_pack_array_is_panel_major():
    b = np.arange(5 * 64, dtype="float32").reshape(5, 64)
    packed = pack_array(b, 32)
    assert packed.shape == packed_shape(b.shape, 32) == (2, 5, 32) and packed.flags.c_contiguous
    for k in range(5):
        for j in range(64):
            assert packed[j // 32, k, j % 32] == b[k, j]


@pytest.mark.parametrize("m", [2, 7, 13, 1023])
@pytest.mark.parametrize("k,n", [(1, 64), (13, 128), (300, 192), (7, 1024)])
def test_packed_matmul_matches_numpy(m, k, n, schedule_target):
    if m * k * n > 4_000_000:
        pytest.skip("covered by smaller shapes")
    _check(m, k, n, target=schedule_target)


@pytest.mark.parametrize("m,k,n", [(64, 784, 512), (13, 1023, 128)])
def test_packed_with_bias_relu_matches_numpy(m, k, n, schedule_target):
    _check(m, k, n, epilogue=True, target=schedule_target)


def test_packed_batched_a_matches_numpy(schedule_target):
    _check(13, 30, 64, batch=(3,), target=schedule_target)


@pytest.mark.parametrize("cpu", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_packed_every_block_boundary_crossed(monkeypatch, cpu):
    monkeypatch.setattr(schedule, "cpu_info", lambda target: cpu)
    monkeypatch.setattr(register_tile, "blocking", lambda cpu, shape, packed_per_call=True, k_extent=None: Blocking(16, 2, 3))
    _check(6 * 13 + 5, 50, panel_width(cpu) * 5, packed_for=cpu)
    _check(6 * 13 + 5, 50, panel_width(cpu) * 5, epilogue=True, packed_for=cpu)


@pytest.mark.parametrize("packed_for", [AVX2, AVX512, CpuInfo.for_level("x86-64-v2")], ids=["avx2", "avx512", "sse"])
def test_weight_packed_for_another_cpu_is_read(packed_for, schedule_target):
    """A `.vms` packed for one CPU and built for another: the tile narrows to divide the panels."""
    _check(13, 40, 128, packed_for=packed_for, target=schedule_target)
    _check(1, 40, 512, strips=True, packed_for=packed_for, target=schedule_target)


def test_scheduled_packed_kernel_copies_no_panel(monkeypatch):
    monkeypatch.setattr(schedule, "cpu_info", lambda target: AVX512)
    name, func = _kernel(64, 784, 512)
    plain = default_cpu_schedule(func)
    packed = default_cpu_schedule(read_packed(func, {1: panel_width(AVX512)}))
    panels = lambda f: [a for a in collect(f.body, tir.Allocate) if a.buffer_var.name.endswith("_panel")]  # noqa: E731
    assert panels(plain) and not panels(packed)
    fmas = [call for call in collect(packed.body, tir.Call) if call.op == "tir.fma"]
    assert len(fmas) == len([call for call in collect(plain.body, tir.Call) if call.op == "tir.fma"]) > 0
    nest = next(n for n in map(match_nest, top_level(read_packed(func, {1: 64}).body)[0]) if n is not None)
    assert register_tile.matches(nest, AVX512)


@pytest.mark.parametrize("m,k,n,why", [
    (1, 512, 256, "a gemv of one strip: its threads split K, not the columns"),
    (1, 512, 520, "a gemv with a ragged last strip"),
    (64, 512, 10, "10 columns: no whole panel"),
    (64, 512, 96, "96 columns: a ragged last panel"),
])
def test_not_packable(m, k, n, why):
    name, func = _kernel(m, k, n)
    assert packable_params(func, AVX512) == {}, why


def test_float64_not_packable():
    name, func = _kernel(13, 64, 64, dtype="float64")
    assert packable_params(func, AVX512) == {}


def test_b_read_twice_not_packable():
    kernels = lowered_kernels('a: R.Tensor((64, 64), "float32"), b: R.Tensor((64, 64), "float32")',
                              "y = R.matmul(a, b)\n            out = R.add(y, b)", 2)
    (func,) = [f for f in kernels.values() if len(f.params) == 3]
    assert packable_params(func, AVX512) == {}


@pytest.mark.parametrize("k", [1, 7, 13, 1023])
@pytest.mark.parametrize("n", [512, 768])
def test_gemv_strips_packed_match_numpy(k, n, schedule_target):
    _check(1, k, n, strips=True, target=schedule_target)


def test_gemv_strips_packed_with_bias_relu_match_numpy(schedule_target):
    _check(1, 784, 512, epilogue=True, strips=True, target=schedule_target)


@pytest.mark.parametrize("cpu", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_gemv_packed_keeps_column_strips(monkeypatch, cpu):
    """A packed gemv weight is read a strip (a contiguous panel) per thread, never split by rows."""
    monkeypatch.setattr(schedule, "cpu_info", lambda target: cpu)
    name, func = _kernel(1, 784, 512)
    plain = default_cpu_schedule(func)
    packed = default_cpu_schedule(read_packed(func, {1: strip_width(cpu)}))
    partials = lambda f: [a for a in collect(f.body, tir.Allocate) if a.buffer_var.name.endswith("_partial")]  # noqa: E731
    assert len(partials(plain)) == 1 and not partials(packed)
    assert [loop.kind for loop in collect(packed.body, tir.For) if loop.kind == "parallel"] == ["parallel"]
    _check(1, 784, 512, strips=True, packed_for=cpu)
