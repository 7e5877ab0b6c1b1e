"""The matmul and conv2d kernels' inner loops keep their accumulators in registers on every target class.

For each target class (x86-64-v2: SSE, 16 registers, no FMA; -v3: AVX2, 16; -v4:
AVX-512, 32; aarch64 NEON, 32; riscv64 with the V extension, 32, and without it, 32
float registers of one lane; the last three built across: assembly only), a register-tiled matmul
(with its last rows and last columns), the same with its weight packed at build time,
a gemv row and three convolutions (NCHW with and without an epilogue, NHWC) are compiled
to assembly. No inner loop that multiplies and adds may
touch the stack at a fixed offset from the stack or frame pointer: that is what a
register spill and its reload look like (on riscv64 a vector register is spilled whole,
vs1r.v / vl1r.v, to a slot addressed through a register). A tile sized for more registers than the
target has spills there (the 4 x 32 AVX-512 tile built for AVX2 kept 21 vectors live in
16 registers: 14 spill stores and 14 reloads per two k steps), so a spill cannot hide on
a CPU nobody benchmarks on. Nothing is executed: it runs on any host.

The parser is small on purpose: an inner loop is one basic block, a label and the jump
back to it with no other label between (LLVM lays out the k loops of the tiles and strips
so; a loop with branches inside is not looked at); it multiplies and adds when it holds
multiply-add instructions (FMA, or SSE's mulps); stack traffic is a load or store
at a fixed offset from the stack pointer. The B panels packed per call live on the stack
too, but the k loop reads them through a moving pointer or an index register.
"""

import functools
import re

import pytest

from relax.codegen.build_kernels import emit_assembly
from relax.ir.module import IRModule
from relax.tir.schedule.cpu import cpu_info
from relax.tir.schedule.packed_weights import panel_width, read_packed

from dataflow_kernels import lowered_kernels

TARGETS = {
    "x86-64-v2": "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v2",
    "x86-64-v3": "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3",
    "x86-64-v4": "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v4",
    "aarch64": "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1",
    "riscv64": "llvm -mtriple=riscv64-linux-gnu -mcpu=generic-rv64 -mattr=+m,+a,+f,+d,+c,+v",
    "riscv64-scalar": "llvm -mtriple=riscv64-linux-gnu",  # rv64gc, no V: float registers, one lane
}
LABEL = re.compile(r"^(\.L\w+):")
# x86 jumps, aarch64 b / b.cond / cb(n)z / tb(n)z, riscv64 beq / bne / blt(u) / bge(u) / beqz / bnez
BACK_EDGE = re.compile(r"^\s+(?:j\w+|b(?:\.\w+|eqz?|nez?|ltu?|geu?)?|cbn?z|tbn?z)\s+(?:.*,\s*)?(\.L\w+)\s*$")
MULTIPLY_ADD = re.compile(r"^\s+(?:v?fn?m(?:add|sub)\w*|fmla|fmls|v?mulps|vfn?m(?:acc|add|sac|sub)\.v[vf]"
                          r"|fn?m(?:add|sub)\.s)\s")
# A fixed offset from the stack pointer: disp(%rsp) with no index register; [sp, #imm] with no
# register offset and no writeback. (The kernels realign their stack for the panels, so LLVM
# addresses its spill slots from the stack pointer; rbp and x29 may hold any pointer.)
# riscv64: a float at d(sp), and a vector register stored or loaded whole (a vector spill slot
# is addressed through a register). Not an integer register at d(sp): the unrolled NHWC
# convolution keeps a pointer per input row and reloads one of them once a trip there (31
# integer registers), a load per 50 multiply-adds and no accumulator.
STACK_SLOT = re.compile(r"-?\d*\(%rsp\)|\[sp(?:,\s*#-?\d+)?\](?![!,])"
                        r"|\bf[ls][wd]\s+\w+,\s*-?\d+\(sp\)|\bv(?:s\d+r|l\d+r(?:e\d+)?)\.v\b")


def inner_loops(assembly: str) -> list[list[str]]:
    """The instructions of each loop that is one basic block: a label, then no other label
    until the jump back to it (the k loops of the tiles and strips are such loops)."""
    loops, label, body = [], None, []
    for line in assembly.splitlines():
        found, jump = LABEL.match(line), BACK_EDGE.match(line)
        if found:
            label, body = found.group(1), []
        elif label is not None:
            body.append(line)
            if jump and jump.group(1) == label:
                loops.append(body)
                label = None
    return loops


def stack_traffic(assembly: str) -> list[list[str]]:
    """For each inner loop that multiplies and adds, its instructions at a fixed stack offset."""
    found = []
    for body in inner_loops(assembly):
        if sum(bool(MULTIPLY_ADD.match(line)) for line in body) >= 2:
            found.append([line.strip() for line in body if STACK_SLOT.search(line)])
    return found


@functools.cache
def _matmul(m: int, k: int, n: int) -> IRModule:
    return IRModule.from_functions(lowered_kernels(
        f'a: R.Tensor(({m}, {k}), "float32"), b: R.Tensor(({k}, {n}), "float32")', "out = R.matmul(a, b)", 2))


def _packed(m: int, k: int, n: int, target: str) -> IRModule:
    (name, func), = _matmul(m, k, n).prim_funcs().items()
    return IRModule.from_functions({name: read_packed(func, {1: panel_width(cpu_info(target))})})


# K long enough that LLVM keeps the k loops as loops: fully unrolled, a tile would read its
# B panel on the stack at fixed offsets, as a reload does.
@functools.cache
def _conv2d(data: tuple, weight: tuple, epilogue: bool, layout: str = "") -> IRModule:
    conv = f"R.nn.conv2d(x, w, padding=[1, 1, 1, 1]{layout})"
    body = f"y = {conv}\n            out = R.nn.relu(y)" if epilogue else f"out = {conv}"
    return IRModule.from_functions(lowered_kernels(
        f'x: R.Tensor({data}, "float32"), w: R.Tensor({weight}, "float32")', body, 2))


KERNELS = {
    "matmul": lambda target: _matmul(13, 256, 72),  # full tiles, the last rows, the last columns
    "packed": lambda target: _packed(12, 256, 128, target),  # the weight in the target's panels
    "gemv": lambda target: _matmul(1, 256, 136),
    # the CNN benchmark's second convolution (in row chunks), a first layer's, and NHWC's shared vectors
    "conv2d": lambda target: _conv2d((1, 16, 16, 16), (32, 16, 3, 3), False),
    "conv2d-relu": lambda target: _conv2d((1, 3, 32, 32), (16, 3, 3, 3), True),
    "conv2d-nhwc": lambda target: _conv2d((1, 16, 16, 16), (3, 3, 16, 32), True,
                                          ', data_layout="NHWC", kernel_layout="HWIO"'),
}


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("target", list(TARGETS.values()), ids=list(TARGETS))
def test_no_stack_traffic_in_inner_loops(target, kernel):
    loops = stack_traffic(emit_assembly(KERNELS[kernel](target), target))
    assert loops, "no inner loop with multiply-adds found"
    assert not any(loops), f"inner loops load or store stack slots (register spills): {[l for l in loops if l]}"


@pytest.mark.parametrize("target, rows", [("x86-64-v3", 4), ("riscv64", 8), ("riscv64-scalar", 8)])
def test_a_tile_too_large_for_the_registers_is_caught(target, rows, monkeypatch):
    """A real spill, not a hand-written one: the matmul built with a tile of `rows` x 4 vectors,
    more registers than the target has (x86-64-v3: 16 + 4 + 1 of 16; riscv64, with vectors or
    float registers of one lane: 32 + 4 + 1 of 32)."""
    from relax.tir.schedule import register_tile
    from relax.tir.schedule.tile_shape import TileShape

    lanes = cpu_info(TARGETS[target]).lanes
    monkeypatch.setattr(register_tile, "_shape", lambda nest, cpu: TileShape(rows, 4, lanes))
    loops = stack_traffic(emit_assembly(_matmul(13, 256, 72), TARGETS[target]))
    assert any(loops), "the oversized tile's k loop shows no stack traffic"


def test_parser_finds_a_spill():
    """The parser on a hand-written AVX2 loop with a spill and its reload, and on an aarch64 one without."""
    spilling = """
.LBB0_3:
\tvbroadcastss\t(%rsi,%rcx), %ymm15
\tvfmadd231ps\t%ymm13, %ymm15, %ymm0
\tvmovups\t%ymm14, 96(%rsp)
\tvfmadd231ps\t64(%rsp), %ymm15, %ymm1
\taddq\t$4, %rcx
\tjne\t.LBB0_3
"""
    clean = """
.LBB0_12:
\tld1r\t{ v8.4s }, [x13], #4
\tldp\tq9, q10, [x28]
\tfmla\tv0.4s, v9.4s, v8.4s
\tfmla\tv1.4s, v10.4s, v8.4s
\tsubs\tx30, x30, #1
\tb.ne\t.LBB0_12
"""
    assert stack_traffic(spilling) == [["vmovups\t%ymm14, 96(%rsp)", "vfmadd231ps\t64(%rsp), %ymm15, %ymm1"]]
    assert stack_traffic(clean) == [[]]


def test_parser_reads_riscv64_loops():
    """A riscv64 V loop with a vector register spilled whole and reloaded and a float spilled (an
    address register's reload is not counted), and one without."""
    spilling = """
.LBB0_6:
\tflw\tfa5, -1024(s8)
\tvle32.v\tv25, (a3)
\tvfmacc.vf\tv21, fa5, v25
\tadd\ta0, a0, sp
\tvs1r.v\tv9, (a0)
\tvl1r.v\tv13, (a1)
\tvfmacc.vf\tv13, fa5, v25
\tfsw\tfa5, 8(sp)
\tld\ta4, 64(sp)
\taddi\ts8, s8, 4
\tbne\ta3, s7, .LBB0_6
"""
    clean = """
.LBB0_7:
\tflw\tfa5, -1024(s8)
\tvle32.v\tv25, (a5)
\tvfmacc.vf\tv21, fa5, v26
\tvfmacc.vf\tv24, fa5, v25
\taddi\ta3, a3, 64
\tbnez\ta3, .LBB0_7
"""
    assert stack_traffic(spilling) == [["vs1r.v\tv9, (a0)", "vl1r.v\tv13, (a1)", "fsw\tfa5, 8(sp)"]]
    assert stack_traffic(clean) == [[]]
