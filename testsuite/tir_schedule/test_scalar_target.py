"""The CPU schedules for a target without float32 vectors: one lane, tiles of scalars.

riscv64 without the V extension (rv64gc, what `llvm -mtriple=riscv64-linux-gnu` is) has 32
float registers and no vector register: its CPU model has one float32 lane (cpu.py,
vector_width.py). Each kernel below is built for this host with that model (the same TIR,
its scalar FMAs compiled for x86), run, and compared with the plain nest built at -O0:
the register tile (full tiles, shorter last rows, the last columns, an epilogue, a batch),
gemv, conv2d (NCHW and NHWC), pooling and a transpose; the streaming stores, which are
whole vectors, must leave their nests alone. riscv64 code is only built here (no riscv64
llvmlite): test_register_tile_assembly.py reads its assembly.
"""

import numpy as np
import pytest

import relax.tir.schedule as schedule
from relax.codegen.build_kernels import build_host_library
from relax.ir import tir
from relax.ir.pass_infra import PassContext
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import streaming_store, transpose
from relax.tir.schedule.cpu import CpuInfo, cpu_info
from relax.tir.schedule.nest import match_nest
from relax.tir.schedule.tile_shape import register_tile_shape

from dataflow_kernels import lowered_kernels
from tile_calls import fma_calls

SCALAR = CpuInfo(vector_bits=32, vector_registers=32, fma=True)
TOLERANCE = dict(rtol=1e-4, atol=1e-4)


def test_the_model_is_riscv64_without_v():
    """(test_cpu_model.py has the riscv64 models.) A tile of 4 rows x 4 columns of scalars: 16
    accumulators, 4 of B and A's broadcast in 32 float registers."""
    riscv = cpu_info("llvm -mtriple=riscv64-linux-gnu")
    assert (riscv.vector_bits, riscv.vector_registers, riscv.fma) == (SCALAR.vector_bits, SCALAR.vector_registers, SCALAR.fma)
    assert (register_tile_shape(SCALAR).rows, register_tile_shape(SCALAR).width) == (4, 4)


def _arrays(func, rng):
    return [rng.standard_normal(tuple(d.value for d in buffer.shape)).astype(buffer.dtype)
            for _, buffer in func.buffer_map]


def _scheduled_with_one_lane(monkeypatch, params: str, body: str) -> dict:
    """The -O2 kernels built plain (-O0) and scheduled for SCALAR, run on the same data: the
    scheduled TIR of each, after checking that both builds computed the same."""
    monkeypatch.setattr(schedule, "cpu_info", lambda target: SCALAR)
    funcs = lowered_kernels(params, body, 2)
    with PassContext(opt_level=0):
        plain = build_host_library(funcs)
    scheduled = build_host_library(funcs)
    for name, func in funcs.items():
        inputs = _arrays(func, np.random.default_rng(len(name)))
        a, b = [x.copy() for x in inputs], [x.copy() for x in inputs]
        plain.get_function(name)(*a)
        scheduled.get_function(name)(*b)
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, **TOLERANCE)
    return {name: schedule.default_cpu_schedule(func) for name, func in funcs.items()}


def _scalar_fmas(funcs: dict) -> int:
    """The tiles' multiply-adds, every one of them on a scalar (no vector dtype)."""
    calls = [call for func in funcs.values() for call in fma_calls(func.body)]
    assert all(call.dtype == "float32" for call in calls), {call.dtype for call in calls}
    return len(calls)


@pytest.mark.parametrize("m, k, n", [(13, 50, 75), (64, 784, 10), (4, 3, 4)])
def test_register_tiles_of_scalars(monkeypatch, m, k, n):
    """Full 4 x 4 tiles, the last rows a tile of fewer, the last columns (n % 4) as narrow tiles."""
    funcs = _scheduled_with_one_lane(monkeypatch, f'a: R.Tensor(({m}, {k}), "float32"), '
                                     f'b: R.Tensor(({k}, {n}), "float32")', "out = R.matmul(a, b)")
    assert _scalar_fmas(funcs) >= 4


def test_register_tiles_of_scalars_with_an_epilogue_and_a_batch(monkeypatch):
    funcs = _scheduled_with_one_lane(
        monkeypatch, 'a: R.Tensor((3, 13, 30), "float32"), b: R.Tensor((3, 30, 70), "float32"), c: R.Tensor((70,), "float32")',
        "y = R.matmul(a, b)\n            z = R.add(y, c)\n            out = R.nn.relu(z)")
    (func,) = funcs.values()
    assert _scalar_fmas(funcs) >= 16 and collect(func.body, tir.Max)  # relu applied in the tiles


def test_gemv_of_scalars(monkeypatch):
    funcs = _scheduled_with_one_lane(
        monkeypatch, 'x: R.Tensor((1, 300), "float32"), w: R.Tensor((300, 77), "float32"), c: R.Tensor((77,), "float32")',
        "y = R.matmul(x, w)\n            z = R.add(y, c)\n            out = R.nn.relu(z)")
    assert _scalar_fmas(funcs) >= 4


@pytest.mark.parametrize("layout", ["", ', data_layout="NHWC", kernel_layout="HWIO"'])
def test_conv2d_of_scalars(monkeypatch, layout):
    data, weight = ((1, 16, 10, 11), (8, 16, 3, 3)) if not layout else ((1, 10, 11, 16), (3, 3, 16, 8))
    funcs = _scheduled_with_one_lane(
        monkeypatch, f'x: R.Tensor({data}, "float32"), w: R.Tensor({weight}, "float32")',
        f"y = R.nn.conv2d(x, w, padding=[1, 1, 1, 1]{layout})\n            out = R.nn.relu(y)")
    assert _scalar_fmas(funcs) >= 8


def test_no_streaming_stores_without_vectors():
    """Non-temporal stores are the streaming rule's whole vectors: one lane has none."""
    (func,) = lowered_kernels('x: R.Tensor((4096, 2048), "float32")', "out = R.exp(x)", 2).values()
    (nest,) = [nest for nest in map(match_nest, top_level(func.body)[0]) if nest is not None]
    assert streaming_store.matches(nest, CpuInfo.for_level("x86-64-v3"))
    assert not streaming_store.matches(nest, SCALAR)


def test_a_transpose_of_scalars(monkeypatch):
    """Its tiles copied element by element (block_lanes 1)."""
    (func,) = lowered_kernels('x: R.Tensor((128, 192), "float32")', "out = R.permute_dims(x, axes=[1, 0])", 2).values()
    (nest,) = [nest for nest in map(match_nest, top_level(func.body)[0]) if nest is not None]
    assert transpose.matches(nest, SCALAR) and transpose.block_lanes(nest, SCALAR) == 1
    _scheduled_with_one_lane(monkeypatch, 'x: R.Tensor((128, 192), "float32")', "out = R.permute_dims(x, axes=[1, 0])")


def test_pooling_of_scalars(monkeypatch):
    """max_pool2d keeps its rule (its padding test dropped, a scalar row of outputs)."""
    _scheduled_with_one_lane(monkeypatch, 'x: R.Tensor((1, 4, 33, 32), "float32")',
                             "out = R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])")
