"""The streaming-store rule (schedule/streaming_store.py) and its code (codegen/nontemporal.py).

The rule takes elementwise nests whose output is at least the last-level cache; the tests
lower that size (FALLBACK_CACHE_BYTES, which the CPU levels' models use) so that small
kernels take it. Kernels are built unscheduled (-O0) and scheduled at each CPU model and
compared with each other and numpy (exact for adds, rtol 1e-6 for exp: vector and
scalar exp differ by an ulp), on outputs aligned to 64 bytes (streamed) and offset by one element
(the plain copy of the loop: a streaming store there would fault), with sizes that leave
a partial chunk and a scalar tail. The assembly of the marked loop is checked for the
streaming stores and the fence at every x86-64 level, and for their absence elsewhere.
"""

import dataclasses

import numpy as np
import pytest

from relax.codegen.build_kernels import build_host_library
from relax.codegen.nontemporal import aligned_ramp, multiple_of
from relax.ir import tir
from relax.ir.pass_infra import PassContext
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import streaming_store, vector_math_rows
from relax.tir.schedule.cpu import CpuInfo
from relax.tir.schedule.nest import match_nest

from dataflow_kernels import lowered_kernels

WIDE = CpuInfo.for_level("x86-64-v4")
SMALL_CACHE = 16 * 1024  # bytes: the last-level cache the tests pretend the CPU has
# 16 lanes: 3 chunks of CHUNK_VECTORS, then 5 vectors and 7 scalars
ODD = 3 * streaming_store.CHUNK_VECTORS * 16 + 5 * 16 + 7


@pytest.fixture
def small_cache(monkeypatch):
    monkeypatch.setattr(streaming_store, "FALLBACK_CACHE_BYTES", SMALL_CACHE)


def _nest(params, body):
    (func,) = lowered_kernels(params, body, 2).values()
    (stmt,) = top_level(func.body)[0]
    return match_nest(stmt)


def test_rule_takes_outputs_of_the_cache_size_only():
    cpu = dataclasses.replace(WIDE, l3_bytes=SMALL_CACHE)
    big = _nest(f'a: R.Tensor(({SMALL_CACHE // 4},), "float32"), b: R.Tensor(({SMALL_CACHE // 4},), "float32")',
                "out = R.add(a, b)")
    small = _nest(f'a: R.Tensor(({SMALL_CACHE // 4 - 16},), "float32")', "out = R.multiply(a, a)")
    ragged_rows = _nest('a: R.Tensor((512, 33), "float32")', "out = R.add(a, a)")
    rows = _nest('a: R.Tensor((512, 32), "float32"), b: R.Tensor((32,), "float32")', "out = R.add(a, b)")
    assert streaming_store.matches(big, cpu) and streaming_store.matches(rows, cpu)
    assert not streaming_store.matches(small, cpu)
    assert not streaming_store.matches(ragged_rows, cpu)  # rows of 33: no aligned vector after the first row
    assert not streaming_store.matches(big, WIDE)  # no L3 size known: FALLBACK_CACHE_BYTES (32 MiB)


def test_rule_writes_marked_vector_loops_in_parallel_chunks():
    cpu = dataclasses.replace(WIDE, l3_bytes=SMALL_CACHE)
    stmt = streaming_store.apply(_nest(f'a: R.Tensor(({ODD},), "float32")', "out = R.exp(a)"), cpu)
    loops = {loop.loop_var.name.split("_", 1)[-1]: loop for loop in collect(stmt, tir.For)}
    assert loops["chunk"].extent.value == 3 and "relax.schedule.independent" in loops["chunk"].annotations
    assert loops["vector"].extent.value == streaming_store.CHUNK_VECTORS
    assert loops["vector_rest"].extent.value == 5 and loops["rest"].extent.value == 7
    for name in ("vector", "vector_rest"):
        assert loops[name].annotations[streaming_store.NONTEMPORAL] == 1
    assert {call.dtype for call in collect(stmt, tir.Call)} == {"float32x16", "float32"}


def _aligned_and_offset(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two float32 arrays of n elements: one 64-byte aligned, one 4 bytes past an alignment."""
    raw = np.empty(n + 32, np.float32)
    start = (-raw.ctypes.data % 64) // 4
    return raw[start:start + n], raw[start + 1:start + 1 + n]


@pytest.mark.parametrize("body,reference,rtol", [
    ("out = R.add(a, b)", lambda a, b: a + b, 0),
    ("out = R.exp(R.subtract(a, b))", lambda a, b: np.exp(a.astype(np.float64) - b), 1e-6),
])
def test_streamed_kernel_matches_numpy_aligned_or_not(small_cache, schedule_target, body, reference, rtol):
    funcs = lowered_kernels(f'a: R.Tensor(({ODD},), "float32"), b: R.Tensor(({ODD},), "float32")', body, 2)
    (name, func), = funcs.items()
    with PassContext(opt_level=0):
        plain = build_host_library(funcs)
    scheduled = build_host_library(funcs, schedule_target)
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(ODD).astype(np.float32) for _ in range(2))
    expected = np.empty(ODD, np.float32)
    plain.get_function(name)(a, b, expected)
    for out in _aligned_and_offset(ODD):
        out[:] = np.nan
        scheduled.get_function(name)(a, b, out)
        np.testing.assert_allclose(out, expected, rtol=rtol)
        np.testing.assert_allclose(out, reference(a, b), rtol=rtol)


@pytest.mark.parametrize("target,stores", [
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64", "movntps\t%xmm"),
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3", "vmovntps\t%ymm"),
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v4", "vmovntps\t%zmm"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1", None),
])
def test_marked_loop_streams_and_fences_on_x86_only(small_cache, target, stores):
    from relax.codegen import emit_assembly
    from relax.target import Target

    funcs = lowered_kernels(f'a: R.Tensor(({ODD},), "float32")', "out = R.add(a, a)", 2)
    text = emit_assembly(funcs, Target.parse(target))
    if stores is None:
        assert "stnp" not in text and "dmb" not in text
    else:
        assert stores in text and "sfence" in text


def test_multiple_of_proves_only_what_holds():
    i, j = tir.Var("i", "int64"), tir.Var("j", "int64")
    c = lambda v: tir.IntImm("int64", v)  # noqa: E731
    assert multiple_of(tir.Add(tir.Mul(i, c(16384)), tir.Mul(j, c(16))), 16)
    assert multiple_of(tir.Mul(tir.Mul(i, c(4)), c(4)), 16)
    assert multiple_of(tir.Mul(c(8), tir.Mul(j, c(2))), 16)
    assert not multiple_of(tir.Add(tir.Mul(i, c(16)), c(1)), 16)
    assert not multiple_of(tir.Mul(i, c(8)), 16)
    assert not multiple_of(i, 16)
    narrowed = tir.Cast("int32", tir.Mul(i, c(12)))  # wraps modulo 2^32, which 12 does not divide
    assert multiple_of(narrowed, 4) and not multiple_of(narrowed, 12)
    assert multiple_of(tir.Cast("int64", tir.Mul(tir.Var("k", "int32"), tir.IntImm("int32", 12))), 12)
    assert not aligned_ramp("float32", tir.Ramp(tir.Mul(i, c(16)), c(2), 16), 16)  # strided
    assert aligned_ramp("float32", tir.Ramp(tir.Mul(i, c(16)), c(1), 16), 16)


def test_vector_math_rule_output_unchanged_by_the_shared_builder():
    nest = _nest('a: R.Tensor((4, 37), "float32")', "out = R.exp(a)")
    stmt = vector_math_rows.apply(nest, WIDE)
    assert not any(loop.annotations for loop in collect(stmt, tir.For) if loop.loop_var.name.endswith("vector"))
