"""The gemv schedule rule (relax.tir.schedule.gemv): matrix-vector kernels compute what the plain nests do.

Models: a (1 x K) @ (K x N) product, alone or followed by an epilogue (bias add and relu,
bias add alone, GELU), built whole (legalize, fuse, schedule, VM) at -O0 (plain nests) and
-O2 (the rule, its fused epilogue), for the generic x86-64 CPU (16 vector registers) and
for the other CPU models the host runs (the strips' vectors and lanes follow the model), run on the same random data
and compared with each other and with numpy (float64). Kernel-level cases check the
structure (register strips, k split for narrow rows, epilogue fused), parallel against serial results,
and that other shapes and dtypes are left to the other rules. Tolerance: rtol 1e-4,
atol 1e-4 (float32 sums of up to 2048 terms; the schedule uses fused multiply-adds and,
for narrow rows, groups the terms by k modulo its split).
"""

import numpy as np
import pytest

from relax.build import build
from relax.codegen.build_kernels import build_host_library
from relax.ir import tir
from relax.script import parse
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import default_cpu_schedule, gemv
from relax.tir.schedule.cpu import CpuInfo
from relax.tir.schedule.gemv import strip_vectors
from relax.tir.schedule.nest import match_nest
from relax.vm import VirtualMachine

from dataflow_kernels import lowered_kernels, module_text

TOLERANCE = dict(rtol=1e-4, atol=1e-4)
# (K, N) around the vector widths (4, 8, 16 lanes), strips (64, 256 columns) and row groups (4):
# each K and each N of 1, 2, 3, primes, one less and one more at least once.
SIZES = [(1, 1), (2, 17), (3, 1023), (7, 16), (13, 33), (15, 65), (16, 7), (17, 255), (33, 3), (255, 257),
         (257, 15), (1023, 63), (5, 31), (64, 513), (300, 2)]
EPILOGUES = {
    "none": ("out = R.matmul(x, w)", lambda y, b: y),
    "bias_relu": ("y = R.matmul(x, w)\n            z = R.add(y, b)\n            out = R.nn.relu(z)",
                  lambda y, b: np.maximum(y + b, 0)),
    "bias": ("y = R.matmul(x, w)\n            out = R.add(y, b)", lambda y, b: y + b),
    "bias_gelu": ("y = R.matmul(x, w)\n            z = R.add(y, b)\n            out = R.nn.gelu(z)",
                  lambda y, b: _gelu(y + b)),
}


def _gelu(x):
    from math import erf

    return x * 0.5 * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def _inputs(k, n, rows=(1,)):
    rng = np.random.default_rng(k * 7919 + n)
    x = rng.standard_normal((*rows, k)).astype("float32")
    w = rng.standard_normal((k, n)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    return x, w, b


def _run(k, n, epilogue: str, target: str, level: int, k_name=None, rows=(1,)):
    """main(x, w, b) built at -O`level` for `target`, run on _inputs(k, n)."""
    kk = f'"{k_name}"' if k_name else k
    shape = ", ".join(str(r) for r in rows)
    params = (f'x: R.Tensor(({shape}, {kk}), "float32"), w: R.Tensor(({kk}, {n}), "float32"), '
              f'b: R.Tensor(({n},), "float32")')
    body = EPILOGUES[epilogue][0]
    if epilogue == "none":
        body += "\n            unused = b"  # b stays a parameter
    exe = build(parse(module_text(params, body)), target, opt_level=level)
    return np.asarray(VirtualMachine(exe, "cpu")["main"](*_inputs(k, n, rows)))


def _check(k, n, epilogue, target, k_name=None, rows=(1,)):
    plain = _run(k, n, epilogue, "llvm", 0, k_name, rows)  # the reference: plain loops, this host
    scheduled = _run(k, n, epilogue, target, 2, k_name, rows)
    x, w, b = _inputs(k, n, rows)
    expected = EPILOGUES[epilogue][1](x.astype(np.float64) @ w.astype(np.float64), b)
    np.testing.assert_allclose(scheduled, plain, **TOLERANCE)
    np.testing.assert_allclose(scheduled, expected, **TOLERANCE)


@pytest.mark.parametrize("k,n", SIZES)
def test_gemv_matches_plain_and_numpy(k, n, schedule_target):
    _check(k, n, "none", schedule_target)


@pytest.mark.parametrize("k,n", SIZES)
def test_gemv_with_bias_relu_matches_plain_and_numpy(k, n, schedule_target):
    _check(k, n, "bias_relu", schedule_target)


@pytest.mark.parametrize("epilogue", ["bias", "bias_gelu"])
@pytest.mark.parametrize("k,n", [(13, 7), (33, 1023), (784, 512), (2048, 10)])
def test_gemv_with_other_epilogues_matches_numpy(k, n, epilogue, schedule_target):
    _check(k, n, epilogue, schedule_target)


@pytest.mark.parametrize("epilogue", ["none", "bias_relu"])
@pytest.mark.parametrize("n", [10, 33, 512])
def test_symbolic_k_matches_numpy(n, epilogue, schedule_target):
    for k in (1, 7, 1023):
        _check(k, n, epilogue, schedule_target, k_name="k")


def test_batched_single_row_matches_numpy(schedule_target):
    _check(100, 70, "bias_relu", schedule_target, rows=(3, 1))


def test_symbolic_batch_of_single_rows_matches_numpy():
    params = 'x: R.Tensor(("b", 1, 33), "float32"), w: R.Tensor((33, 20), "float32")'
    funcs = lowered_kernels(params, "out = R.matmul(x, w)")
    func, nest = _matmul_func(funcs)
    assert gemv.matches(nest, AVX512)
    for level in (0, 2):
        exe = build(parse(module_text(params, "out = R.matmul(x, w)")), "llvm", opt_level=level)
        x, w, _ = _inputs(33, 20, rows=(5, 1))
        out = np.asarray(VirtualMachine(exe, "cpu")["main"](x, w))
        np.testing.assert_allclose(out, x.astype(np.float64) @ w, **TOLERANCE)


# -- kernel level: structure, parallel against serial ----------------------------------------


def _kernels(k, n, epilogue="none"):
    params = f'x: R.Tensor((1, {k}), "float32"), w: R.Tensor(({k}, {n}), "float32"), b: R.Tensor(({n},), "float32")'
    body = EPILOGUES[epilogue][0] + ("\n            unused = b" if epilogue == "none" else "")
    return lowered_kernels(params, body, 2)


def _matmul_func(funcs: dict):
    for func in funcs.values():
        for stmt in top_level(func.body)[0]:
            nest = match_nest(stmt)
            if nest is not None and nest.iters("CommReduce"):
                return func, nest
    raise AssertionError("no reduction nest")


def _fmas(stmt) -> list:
    return [call for call in collect(stmt, tir.Call) if call.op == "tir.fma"]


AVX512 = CpuInfo.for_level("x86-64-v4")  # strips of 16 vectors of 16 lanes, 8 chains
AVX2 = CpuInfo.for_level("x86-64-v3")  # strips of 8 vectors of 8 lanes, 8 chains


@pytest.mark.parametrize("cpu, vectors, split", [(AVX512, {"float32x10"}, 8), (AVX2, {"float32x8", "float32x2"}, 4)],
                         ids=["avx512", "avx2"])
def test_narrow_rows_split_k_over_registers(cpu, vectors, split):
    _, nest = _matmul_func(_kernels(2048, 10))
    assert gemv.matches(nest, cpu)
    stmt = gemv.apply(nest, cpu)
    assert {call.dtype for call in _fmas(stmt)} == vectors
    groups = [loop for loop in collect(stmt, tir.For) if loop.loop_var.name.endswith(f"g{split}")]
    assert [g.extent.value for g in groups] == [2048 // split]  # k dealt round `split` sets: 8 chains in all


@pytest.mark.parametrize("cpu", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_wide_rows_in_register_strips(cpu):
    _, nest = _matmul_func(_kernels(400, 256))  # 400 KB of B: under K_SPLIT_MIN_BYTES, column strips
    stmt = gemv.apply(nest, cpu)
    vectors = strip_vectors(cpu)
    strips = [loop for loop in collect(stmt, tir.For) if "strip" in loop.loop_var.name]
    assert [s.extent.value for s in strips] == [256 // (vectors * cpu.lanes)]
    assert not [loop for loop in collect(stmt, tir.For) if loop.loop_var.name.endswith("_block")]
    groups = [loop for loop in collect(stmt, tir.For) if loop.loop_var.name.endswith(f"g{gemv.GROUP_ROWS}")]
    assert [g.extent.value for g in groups] == [400 // gemv.GROUP_ROWS]
    assert len(_fmas(groups[0].body)) == gemv.GROUP_ROWS * vectors  # GROUP_ROWS rows of B per iteration


def test_big_products_split_b_by_rows_for_the_threads():
    """784 x 512 (1.6 MB of B): K_BLOCKS blocks of whole rows are the parallel loop, each
    summing into its row of partial sums; one vector pass adds them and applies the epilogue."""
    funcs = _kernels(784, 512, "bias_relu")
    func, nest = _matmul_func(funcs)
    stmt = gemv.apply(nest, AVX512)
    blocks = [loop for loop in collect(stmt, tir.For) if loop.loop_var.name.endswith("_block")]
    assert [b.extent.value for b in blocks] == [gemv.K_BLOCKS]
    groups = [loop for loop in collect(stmt, tir.For) if loop.loop_var.name.endswith(f"g{gemv.GROUP_ROWS}")]
    assert [g.extent.value for g in groups] == [784 // gemv.K_BLOCKS // gemv.GROUP_ROWS]
    scheduled = default_cpu_schedule(func)
    parallel = [loop for loop in collect(scheduled.body, tir.For) if loop.kind == "parallel"]
    assert [loop.loop_var.name.endswith("_block") for loop in parallel] == [True]


@pytest.mark.parametrize("k, n", [(784, 512), (1024, 300), (520, 1023)])
@pytest.mark.parametrize("epilogue", ["none", "bias_relu", "bias_gelu"])
def test_row_blocks_match_plain_and_numpy(k, n, epilogue, schedule_target):
    _check(k, n, epilogue, schedule_target)


def test_columns_left_after_the_strips_split_k():
    _, nest = _matmul_func(_kernels(64, 16 * strip_vectors(AVX512) + 20))  # one strip, then 16 + 4 columns
    stmt = gemv.apply(nest, AVX512)
    groups = [loop for loop in collect(stmt, tir.For) if loop.loop_var.name.endswith("_g4")]
    assert [g.extent.value for g in groups] == [16, 16]  # 64 rows: the strip in steps of 4, the rest over 4 sets
    assert {call.dtype for call in _fmas(groups[1].body)} == {"float32x16", "float32x4"}
    assert len(_fmas(groups[1].body)) == 2 * 4


@pytest.mark.parametrize("epilogue,operation", [("bias_relu", tir.Max), ("bias_gelu", tir.Call)])
def test_epilogue_is_fused_into_the_store(epilogue, operation, monkeypatch):
    import relax.tir.schedule as schedule

    monkeypatch.setattr(schedule, "cpu_info", lambda target: AVX512)
    func, _ = _matmul_func(_kernels(784, 512, epilogue))
    scheduled = default_cpu_schedule(func)
    statements = top_level(scheduled.body)[0]
    output = func.buffer_map[-1][1]
    writers = [stmt for stmt in statements if any(s.buffer is output for s in collect(stmt, tir.BufferStore))]
    assert len(writers) == 1  # the output is written by the scheduled product itself
    assert any("x16" in e.dtype and getattr(e, "op", "tir.erf") == "tir.erf" for e in collect(writers[0], operation))


def test_parallel_matches_serial():
    funcs = _kernels(784, 512, "bias_relu")
    func, _ = _matmul_func(funcs)
    scheduled = default_cpu_schedule(func)
    assert any(loop.kind == "parallel" for loop in collect(scheduled.body, tir.For))
    library = build_host_library(funcs)
    x, w, b = _inputs(784, 512)
    results = []
    for threads in (1, 2):
        library.num_threads = threads
        library.parallel_threshold_bytes = 0
        out = np.zeros((1, 512), "float32")
        name = next(name for name, f in funcs.items() if f is func)
        library.get_function(name)(x, w, b, out)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])  # row blocks, each summed and added the same way


def test_rule_leaves_several_rows_and_other_dtypes():
    _, nest = _matmul_func(lowered_kernels('x: R.Tensor((4, 64), "float32"), w: R.Tensor((64, 64), "float32")',
                                           "out = R.matmul(x, w)"))
    assert not gemv.matches(nest, CpuInfo())
    _, nest = _matmul_func(lowered_kernels('x: R.Tensor((1, 64), "float64"), w: R.Tensor((64, 64), "float64")',
                                           "out = R.matmul(x, w)"))
    assert not gemv.matches(nest, CpuInfo())


def test_default_schedule_picks_gemv_for_mlp_layer():
    func, _ = _matmul_func(_kernels(784, 512))
    scheduled = default_cpu_schedule(func)
    assert any("strip" in loop.loop_var.name for loop in collect(scheduled.body, tir.For))

