"""The CPU model (relax.tir.schedule.cpu) and the register tile and blocking derived from it (tile_shape.py).

The model comes from the target, never the host unless the target is the host: levels and
cross targets from their features and a small cache table, the host's caches from /sys.
The tile rule is table-free: these cases pin what it gives for each register file.
"""

import pytest

from relax.tir.schedule.cpu import CACHES, CpuInfo, cpu_info, host_caches
from relax.tir.schedule.tile_shape import (TileShape, blocking, k_block, panel_in_l2, register_tile_shape,
                                           row_block_tiles)

KIB, MIB = 1024, 1024 * 1024


@pytest.mark.parametrize("target, bits, registers, fma", [
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64", 128, 16, False),
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v2", 128, 16, False),
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3", 256, 16, True),
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v4", 512, 32, True),
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell", 256, 16, True),  # a named CPU: LLVM is asked
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=bdver2", 256, 16, True),  # FMA3 without AVX2
    ("llvm -mtriple=x86_64-linux-gnu -mattr=+avx2,+fma", 256, 16, True),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1", 128, 32, True),
    ("llvm -mtriple=riscv64-linux-gnu -mattr=+v", 128, 32, True),
    ("llvm -mtriple=riscv64-linux-gnu -mcpu=sifive-x280", 128, 32, True),  # V by its name: LLVM is asked
    ("llvm -mtriple=riscv64-linux-gnu", 32, 32, True),  # rv64gc: float registers, one lane
    ("llvm -mtriple=riscv64-linux-gnu -mcpu=sifive-u74", 32, 32, True),
    ("llvm -mtriple=i686-linux-gnu -mcpu=pentium4", 128, 8, False),  # 32-bit x86: 8 xmm registers
    ("llvm -mtriple=i686-linux-gnu -mcpu=haswell", 128, 8, True),  # AVX's vaddps, and FMA
    ("llvm -mtriple=i686-linux-gnu", 32, 8, False),  # a Pentium Pro: x87, no SSE
    ("llvm -mtriple=armv7-linux-gnueabihf -mattr=+neon", 128, 16, False),  # NEON's 16 q registers
])
def test_model_of_the_target(target, bits, registers, fma):
    cpu = cpu_info(target)
    assert (cpu.vector_bits, cpu.vector_registers, cpu.fma, cpu.lanes) == (bits, registers, fma, bits // 32)
    assert cpu.chains == 8


def test_cross_targets_take_the_cache_table():
    neoverse = cpu_info("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1")
    assert (neoverse.l1d_bytes, neoverse.l2_bytes) == CACHES["neoverse-n1"][:2] == (64 * KIB, 1 * MIB)
    level = CpuInfo.for_level("x86-64-v3")  # many CPUs: the small default
    assert (level.l1d_bytes, level.l2_bytes) == (32 * KIB, 256 * KIB)


def test_host_caches_read_from_sys(tmp_path):
    for index, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                                                 (3, "Unified", "300M")]):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (folder / name).write_text(f"{value}\n")
    assert host_caches.__wrapped__(tmp_path) == (48 * KIB, 2 * MIB, 300 * MIB)
    assert host_caches.__wrapped__(tmp_path / "missing") is None


def test_host_target_is_the_host():
    host = cpu_info(None)
    assert cpu_info("llvm -mcpu=native") == host
    if host_caches() is not None:
        assert (host.l1d_bytes, host.l2_bytes) == host_caches()[:2]


@pytest.mark.parametrize("registers, fma, lanes, shape", [
    (16, True, 8, TileShape(6, 2, 8)),  # AVX2: BLIS's 6 x 16 floats, 15 registers
    (16, False, 4, TileShape(6, 2, 4)),  # SSE: one register more for each product
    (32, True, 16, TileShape(4, 4, 16)),  # AVX-512: 16 accumulators (twice the chains), 16 FMAs per 8 loads
    (32, True, 4, TileShape(4, 4, 4)),  # NEON
])
def test_tile_maximizes_fmas_per_load_in_the_registers(registers, fma, lanes, shape):
    cpu = CpuInfo(vector_bits=32 * lanes, vector_registers=registers, fma=fma)
    assert register_tile_shape(cpu) == shape
    assert shape.registers(fma) <= registers and cpu.chains <= shape.rows * shape.vectors <= 2 * cpu.chains


@pytest.mark.parametrize("panel_width, shape", [
    (64, TileShape(4, 4, 16)), (32, TileShape(8, 2, 16)), (16, TileShape(16, 1, 16)), (8, TileShape(16, 1, 8)),
])
def test_packed_panels_narrow_the_tile(panel_width, shape):
    """A weight packed in panels of another width: the best tile whose width divides them."""
    assert register_tile_shape(CpuInfo.for_level("x86-64-v4"), panel_width) == shape


def test_blocking_from_the_caches():
    xeon = CpuInfo(vector_bits=512, vector_registers=32, fma=True, l1d_bytes=48 * KIB, l2_bytes=2 * MIB)
    assert k_block(xeon, TileShape(8, 2, 16), packed_per_call=False) == 256  # the B panel: 32 KiB, 2/3 of L1
    assert k_block(xeon, TileShape(4, 4, 16)) == 128
    assert row_block_tiles(xeon, 8, 256) == 32  # 256 rows of A: 256 KiB of a 2 MiB L2
    small = CpuInfo(vector_bits=256, fma=True, l1d_bytes=32 * KIB, l2_bytes=256 * KIB)
    assert k_block(small, TileShape(6, 2, 8)) == 512 and row_block_tiles(small, 6, 512) == 10  # 64 rows: half of L2
    assert blocking(xeon, register_tile_shape(xeon)).chunk_tiles == 1  # 64 columns: one tile of 64


def test_a_tile_that_reads_little_of_b_per_cycle_packs_longer_k_blocks_in_l2():
    """AVX2's 6 x 16 tile reads 64 bytes of B per 6 cycles of FMAs (10.7 a cycle): its chunk's
    panels, packed per call, take half of L2 (Zen 3's 512 KiB: 1024 steps, at most 1024),
    so C is read and written fewer times. AVX-512's 4 x 64 reads 32 bytes a cycle and keeps its
    panel in L1, and so does a weight packed at build time."""
    avx2, avx512 = TileShape(6, 2, 8), TileShape(4, 4, 16)
    zen3 = CpuInfo(vector_bits=256, fma=True, l1d_bytes=32 * KIB, l2_bytes=512 * KIB)
    assert panel_in_l2(zen3, avx2) and k_block(zen3, avx2) == 1024
    assert k_block(CpuInfo(vector_bits=256, fma=True, l2_bytes=256 * KIB), avx2) == 512
    assert k_block(zen3, avx2, packed_per_call=False) == 256
    assert k_block(CpuInfo(vector_bits=256, fma=True, l2_bytes=4 * MIB), avx2) == 1024
    zen4 = CpuInfo(vector_bits=512, vector_registers=32, fma=True, l1d_bytes=32 * KIB, l2_bytes=1 * MIB)
    assert not panel_in_l2(zen4, avx512) and k_block(zen4, avx512) == 80  # 2/3 of L1 for 64 columns
    sizes = blocking(zen3, avx2)
    assert row_block_tiles(zen3, 6, sizes.k_steps) == sizes.row_block_tiles == 10  # A's block: half of L2


def test_a_constant_k_is_cut_into_equal_blocks_and_the_row_block_fits_the_block_that_runs():
    """K = 1100 with blocks of at most 1024: two of 550, not 1024 + 76. K = 256, shorter than
    a block: one block of 256, and the row block of A takes half of L2 at 256 steps a row
    (256 rows, the most), not at the 1024 steps a longer K would run."""
    zen3, avx2 = CpuInfo(vector_bits=256, fma=True, l1d_bytes=32 * KIB, l2_bytes=512 * KIB), TileShape(6, 2, 8)
    assert blocking(zen3, avx2, k_extent=1100).k_steps == 550
    short = blocking(zen3, avx2, k_extent=256)
    assert (short.k_steps, short.row_block_tiles) == (256, 42)
    assert blocking(zen3, avx2).row_block_tiles == 10
