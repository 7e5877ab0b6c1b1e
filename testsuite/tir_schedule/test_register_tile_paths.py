"""The register-tile rule's shape paths (relax.tir.schedule.register_tile) against the plain nests and numpy.

Each case legalizes and fuses (-O2) a float32 matmul, alone, batched or followed by a
bias add and relu, builds its kernels unscheduled (-O0) and scheduled, runs both on
the same random data and compares them with each other and with numpy (float64).
The paths: full tiles (their shape from the CPU model: tile_shape.py) in parallel
column chunks with packed B panels, the last rows as one smaller tile, the last columns
(or a matrix narrower than one tile) as tiles of the target's vectors over a zero-padded
panel, a symbolic K (k blocks, the last one shorter), and the blocking made small so
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
from relax.tir.schedule import default_cpu_schedule, register_tile, register_tile_rows
from relax.tir.schedule.cpu import CpuInfo
from relax.tir.schedule.tile_shape import Blocking, register_tile_shape
from relax.tir.schedule.nest import match_nest
from relax.ir.pass_infra import PassContext

from dataflow_kernels import lowered_kernels
from tile_calls import fma_calls

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


AVX512 = CpuInfo.for_level("x86-64-v4")  # 4 x 4 vectors of 16 lanes
AVX2 = CpuInfo.for_level("x86-64-v3")  # 6 x 2 vectors of 8 lanes


def _scheduled_matmul(m, k, n, cpu=AVX512):
    """The matmul nest of (m x k) @ (k x n), scheduled by the register-tile rule."""
    (func,) = lowered_kernels(f'a: R.Tensor(({m}, {k}), "float32"), b: R.Tensor(({k}, {n}), "float32")',
                              "out = R.matmul(a, b)", 2).values()
    nest = next(n for n in map(match_nest, top_level(func.body)[0]) if n is not None)
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


@pytest.mark.parametrize("cpu", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_every_block_boundary_crossed(monkeypatch, cpu):
    """Tiny blocking: partial column chunks, row blocks and k blocks on a small matmul, the
    tiles of `cpu` (its code built for this host: both are 128-bit-safe LLVM vectors)."""
    monkeypatch.setattr(schedule, "cpu_info", lambda target: cpu)
    monkeypatch.setattr(register_tile, "blocking", lambda cpu, shape, packed_per_call=True, k_extent=None: Blocking(16, 2, 3))
    shape = register_tile_shape(cpu)
    _check(shape.rows * 13 + 5, 50, shape.width * 5 + 7)
    _check(shape.rows * 13 + 5, 50, shape.width * 5 + 7, epilogue=True)
    # K in one k block: the last row tile overlaps, and joins the last row block (of 2 or 3 tiles)
    for m in (shape.rows * 12 + 5, shape.rows * 13 + 5):
        _check(m, 12, shape.width * 5 + 7)


def test_k_blocks_of_panels_kept_in_l2(monkeypatch):
    """AVX2's tiles with a 1 MiB L2 (Zen 4's, as the AVX2 code of such a host is scheduled):
    panels packed per call in k blocks of up to 1024 steps (K = 1100: two blocks of 550), the
    shorter last rows included, against numpy."""
    zen = CpuInfo(vector_bits=256, vector_registers=16, fma=True, l1d_bytes=32 * 1024, l2_bytes=1 << 20)
    monkeypatch.setattr(schedule, "cpu_info", lambda target: zen)
    assert register_tile.blocking(zen, register_tile_shape(zen)).k_steps == 1024
    _check(6 * 11 + 4, 1100, 16 * 9)
    _check(6 * 11 + 4, 1100, 16 * 9, epilogue=True)


def test_float64_is_not_claimed_and_stays_correct(schedule_target):
    (func,) = lowered_kernels('a: R.Tensor((64, 64), "float64"), b: R.Tensor((64, 64), "float64")',
                              "out = R.matmul(a, b)", 2).values()
    nest = next(n for n in map(match_nest, top_level(func.body)[0]) if n is not None)
    assert not register_tile.matches(nest, AVX512)
    _check(13, 64, 40, dtype="float64", target=schedule_target)


def _fma_count(stmt) -> int:
    return len(fma_calls(stmt))


@pytest.mark.parametrize("m, tiles", [(13, [(6, 2), (1, 1)]), (64, [(6, 9), (5, 2)]), (25, [(5, 5)]), (12, [(6, 2)])])
def test_row_parts_take_tiles_a_row_shorter(m, tiles):
    """M no multiple of the tile's 6 rows (AVX2): row_parts' last tiles are a row shorter
    (64 = 9 x 6 + 2 x 5), or, where M is too small for that, one tile takes the rows left
    (13 = 2 x 6 + 1)."""
    assert register_tile_rows.row_parts(m, 6) == [(rows, sum(r * c for r, c in tiles[:i]), count)
                                              for i, (rows, count) in enumerate(tiles)]


@pytest.mark.parametrize("k", [64, 2100], ids=["one-k-block", "k-blocks"])
@pytest.mark.parametrize("m, heights", [(64, [6]), (128, [6]), (1023, [6]), (13, [6, 1]), (25, [5]), (12, [6])])
def test_the_last_row_tile_overlaps(m, heights, k):
    """Where M is no multiple of the 6 rows, the last tile starts M - 6 rows down instead
    (128 rows: 22 tiles, the last from row 122), recomputing at most M / 16 rows, so one
    tile height is generated, whether K is one k block or cut into blocks; 13 rows (5 of
    18 recomputed) keep a 1-row tile. Each height is one loop body of rows x 2 fma; no
    scalar row loop."""
    stmt = _scheduled_matmul(m, k, 64, AVX2)
    assert _fma_count(stmt) == sum(rows * 2 for rows in heights)
    assert bool(_overlap_starts(stmt, m)) == (heights == [6] and m % 6 != 0)
    assert not any("rest" in loop.loop_var.name for loop in collect(stmt, tir.For))


def _kept_rows(stmt) -> list:
    """The stores an overlapping tile makes of its recomputed rows' own values."""
    return [node for node in collect(stmt, tir.Select) if isinstance(node.false_value, tir.BufferLoad)]


@pytest.mark.parametrize("m, kept", [(64, True), (66, False), (13, False)])
def test_in_k_blocks_the_overlapping_tile_keeps_the_rows_before(m, kept):
    """In k blocks, C += each block's sums: the overlapping tile stores the rows it
    recomputes as they are (a select on the row, no branch), or they would be added twice.
    A single k block stores each tile once (the recomputed rows get the same values), and
    tiles that do not overlap store every row."""
    assert bool(_kept_rows(_scheduled_matmul(m, 2100, 64, AVX2))) == kept
    assert not _kept_rows(_scheduled_matmul(m, 64, 64, AVX2))


def _overlap_starts(stmt, m: int) -> list:
    """The tile starts held at M - 6 (an overlapping last tile of 6 rows)."""
    return [node for node in collect(stmt, tir.Min) if isinstance(node.b, tir.IntImm) and node.b.value == m - 6]


@pytest.mark.parametrize("m,k,n", [(128, 64, 48), (64, 256, 40), (1023, 13, 45), (64, 2100, 40), (128, 1100, 48)])
@pytest.mark.parametrize("epilogue", [False, True])
def test_overlapping_last_row_tile_matches_numpy(m, k, n, epilogue, schedule_target):
    _check(m, k, n, epilogue=epilogue, target=schedule_target)


_IN_PLACE = """
@I.ir_module
class Module:
    @T.prim_func
    def kernel(a: T.Buffer(({m}, {k}), "float32"), b: T.Buffer(({k}, {n}), "float32"), r: T.Buffer(({m}, {n}), "float32")):
        c = T.alloc_buffer(({m}, {n}))
        for i, j, k in T.grid({m}, {n}, {k}):
            with T.block("c"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    c[vi, vj] = T.float32(0.0)
                c[vi, vj] = c[vi, vj] + a[vi, vk] * b[vk, vj]
        for i, j in T.grid({m}, {n}):
            with T.block("r"):
                vi, vj = T.axis.remap("SS", [i, j])
                r[vi, vj] = c[vi, vj] + r[vi, vj]
"""


def _in_place(m: int, k: int, n: int) -> tir.PrimFunc:
    """r += a @ b: the kernel's product and the epilogue that adds it to r, a parameter."""
    from relax.script import parse

    text = _IN_PLACE.format(m=m, k=k, n=n)
    (func,) = parse(text).prim_funcs().values()
    return func


def test_a_tile_that_updates_its_input_in_place_is_not_computed_twice(monkeypatch):
    """r += a @ b, r a parameter the epilogue reads and stores: a row tile computed twice
    would add the product twice, so the last rows keep their shorter tiles."""
    monkeypatch.setattr(schedule, "cpu_info", lambda target: AVX2)
    func = _in_place(64, 64, 32)
    assert _fma_count(default_cpu_schedule(func).body) == (6 + 5) * 2
    rng = np.random.default_rng(5)
    a, b, r = (rng.standard_normal(shape).astype("float32") for shape in ((64, 64), (64, 32), (64, 32)))
    out = r.copy()
    build_host_library({"kernel": func}).get_function("kernel")(a, b, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b + r, **TOLERANCE)


@pytest.mark.parametrize("cpu, lanes, ten, six", [(AVX512, 16, [8], [8]), (AVX2, 8, [6, 4], [8])], ids=["avx512", "avx2"])
def test_narrow_columns_take_tiles_of_the_targets_vectors(cpu, lanes, ten, six):
    """The last columns: tiles of the target's vectors, with rows enough for 8 chains of
    accumulators (10 columns: 8 rows of one vector on AVX-512; 6 and the last 4 rows of
    two on AVX2; 6 columns: 8 rows of one vector), no scalar loops."""
    stmt = _scheduled_matmul(64, 512, 10, cpu)
    assert _fma_count(stmt) == sum(ten) * -(-10 // lanes)
    assert {call.dtype for call in collect(stmt, tir.Call) if call.op == "tir.fma"} == {f"float32x{lanes}"}
    assert not any("rest" in loop.loop_var.name for loop in collect(stmt, tir.For))
    # a full tile and 6 columns more: the full tiles' heights, then the narrow rows.
    shape = register_tile_shape(cpu)
    full = _fma_count(_scheduled_matmul(64, 512, shape.width, cpu))
    assert _fma_count(_scheduled_matmul(64, 512, shape.width + 6, cpu)) == full + sum(six)


# AVX-512 with this host's caches: k blocks of 128 steps for the 64-column panels (48 KiB L1).
XEON = CpuInfo(vector_bits=512, vector_registers=32, fma=True, l1d_bytes=48 * 1024, l2_bytes=2 * 1024 * 1024)


def test_column_chunks_run_in_parallel_over_equal_k_blocks(monkeypatch):
    monkeypatch.setattr(schedule, "cpu_info", lambda target: XEON)
    (func,) = lowered_kernels('a: R.Tensor((64, 784), "float32"), b: R.Tensor((784, 512), "float32")',
                              "out = R.matmul(a, b)", 2).values()
    scheduled = default_cpu_schedule(func)
    loops = list(collect(scheduled.body, tir.For))
    parallel = [loop for loop in loops if loop.kind == "parallel"]
    assert len(parallel) == 1 and parallel[0].extent.value >= register_tile.MIN_CHUNKS
    k_blocks = [loop for loop in loops if loop.loop_var.name.endswith("_outer")]
    assert k_blocks and k_blocks[0].extent.value == 7  # 784 = 7 x 112, not 6 x 128 + 16
    buffers = {alloc.buffer_var.name for alloc in collect(scheduled.body, tir.Allocate)}
    assert any(name.endswith("_panel") for name in buffers)  # B packed per column tile and k block


def test_bias_relu_applied_to_the_tiles_in_registers(monkeypatch):
    """The epilogue nest goes: the last k block stores max(acc + bias, 0) from the registers."""
    monkeypatch.setattr(schedule, "cpu_info", lambda target: XEON)
    (func,) = _funcs(64, 784, 512, epilogue=True).values()
    scheduled = default_cpu_schedule(func)
    assert len(top_level(scheduled.body)[0]) == 1  # one statement: the tiles, no pass over C after
    (branch,) = [s for s in collect(scheduled.body, tir.IfThenElse) if collect(s.then_case, tir.Max)]
    assert branch.condition.b.value == 6  # 784 = 7 k blocks of 112: the last one finishes


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


def _panel_sizes(stmt) -> list[int]:
    return [alloc.extents[0].value for alloc in collect(stmt, tir.Allocate) if alloc.buffer_var.name.endswith("_panel")]


@pytest.mark.parametrize("cpu, panels", [(AVX2, 4), (AVX512, 1)], ids=["avx2", "avx512"])
def test_a_chunks_panels_are_packed_once_per_k_block_before_its_row_blocks(cpu, panels):
    """With several row blocks and column tiles per chunk (AVX2: four 16-column tiles), one
    allocation holds the chunk's panels of a k block, packed before the row blocks and read by
    all of them, B's rows read across the chunk's width; with one tile per chunk (AVX-512) the
    panel is packed per row block as before."""
    shape = register_tile_shape(cpu)
    sizes = register_tile.blocking(cpu, shape, k_extent=1024)
    stmt = _scheduled_matmul(1020, 1024, 1024, cpu)  # 1020 rows: tiles of 6 (AVX2) or 4 rows only
    assert _panel_sizes(stmt) == [panels * sizes.k_steps * shape.width]
    loops = [loop.loop_var.name for loop in collect(stmt, tir.For)]
    packing_first = loops.index(next(name for name in loops if name.endswith("_pack" if panels > 1 else "_tile")))
    assert (loops.index(next(name for name in loops if name.endswith("_block"))) > packing_first) == (panels > 1)


def test_a_chunks_panels_are_shared_with_one_row_block_too():
    """128 rows are one AVX2 row block: the chunk's four panels are still packed together,
    each row of B read across the chunk's 64 columns (4 cache lines) rather than a tile's 16
    (1 line, on a new page for every row when N is 1024)."""
    shape = register_tile_shape(AVX2)
    sizes = register_tile.blocking(AVX2, shape, k_extent=256)
    stmt = _scheduled_matmul(128, 256, 1024, AVX2)
    assert _panel_sizes(stmt) == [4 * sizes.k_steps * shape.width]
    loops = [loop.loop_var.name for loop in collect(stmt, tir.For)]
    assert not any(name.endswith("_block") for name in loops)
    first_pack = next(i for i, name in enumerate(loops) if name.endswith("_pack"))
    assert first_pack < next(i for i, name in enumerate(loops) if name.endswith("_tile"))


@pytest.mark.parametrize("cpu, m", [(AVX2, 1024), (AVX512, 1022)], ids=["avx2", "avx512"])
def test_the_shorter_row_tiles_read_the_full_tiles_panels(monkeypatch, cpu, m):
    """Rows that are no multiple of the tile's (1024 = 169 x 6 + 2 x 5 on AVX2, 1022 = 254 x 4
    + 2 x 3 on AVX-512) in a kernel whose tiles may not be computed twice (r += a @ b) end in
    a few shorter tiles. They run in the last row block, inside the full tiles' column-tile
    loop, from the same packed panels: the last rows do not pack B again."""
    monkeypatch.setattr(schedule, "cpu_info", lambda target: cpu)
    stmt = default_cpu_schedule(_in_place(m, 1024, 1024)).body
    assert len(_panel_sizes(stmt)) == 1
    tile_loops = [loop for loop in collect(stmt, tir.For) if loop.loop_var.name.endswith("_tile")]
    columns = tile_loops[0]  # the column tiles' loop holds the row tiles of both sizes
    row_tiles = [loop for loop in collect(columns.body, tir.For) if loop.loop_var.name.endswith("_tile")]
    tile_rows = {alloc.extents[0].value // register_tile_shape(cpu).width
                 for loop in row_tiles for alloc in collect(loop, tir.Allocate) if alloc.buffer_var.name.endswith("_tile")}
    assert tile_rows == {register_tile_shape(cpu).rows, register_tile_shape(cpu).rows - 1}
