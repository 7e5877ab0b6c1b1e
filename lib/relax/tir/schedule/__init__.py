"""Default CPU schedules: each kernel's loop nests reordered, tiled and parallelized by their structure.

Runs on block-form PrimFuncs (what legalization and FuseTIR write), before
relax.tir.pipeline lowers them, at -O1 and above. Each top-level nest is matched
against RULES in order (rules as data: the first that matches rewrites the nest
into plain loops); every nest then gets its outer independent loop parallel when
it is big (parallel.py). Rules reorder, tile, pack and accumulate in registers;
each output element still combines its terms in the plain nest's order (register
tiles round a multiply-add once; vector row reductions group terms by lane).

    for i, j, k in T.grid(1024, 1024, 1024):       for chunk in T.parallel(16):       # 64 columns each
        with T.block("matmul"): ...          ->         ...pack B[k0:k0+256, j0:j0+16]...
            C[vi, vj] += A[vi, vk] * B[vk, vj]              for j_tile, i_tile: ...    # 6 x 16 in registers (AVX2)
                                                                for k in range(256): 12 x T.fma(...)

The rules take their sizes (vector lanes, tile shapes, blocking) from the CPU model of the
target (cpu.py: vector width and registers, FMA, caches; tile_shape.py: the register tile).

The pass-config key CONFIG_KEY ("tir.default_cpu_schedule") set to 0/false turns it off;
-O0 never runs it, so plain nests stay available for comparison.

First, in kernels without a conv2d or gemv (whose rules apply the nests after them
in registers), elementwise producers are inlined into their consumers (inline.py: a GELU
epilogue's six nests become one pass over memory), then the last intermediate moves
into the output buffer where the last nest reads it only at the index it writes
(output_reuse.py: a matmul accumulates into the output its epilogue rewrites in place).

| rule | file | matches |
| --- | --- | --- |
| gemv | gemv.py | float32 matrix-vector products (one row of C, B's last index j): B streamed 4 rows per pass over C's row (in L1), or k split over registers for narrow rows; bias/relu/GELU nests after it applied before the store |
| register-tile | register_tile.py | float32 matmul and batched matmul with constant M and N: column chunks in parallel, packed B panels (or a weight packed at build time, read in place), C tiles in vector registers sized by the CPU model (tile_shape.py; narrow tiles of the target's vectors for the last columns); bias/relu nests after it applied to the finished tiles before their last store (GELU's erf stays a nest) |
| conv2d | conv2d.py | float32 NCHW conv2d (groups 1, constant shapes): channels x rows of output vectors in registers |
| pool | pool.py | window reductions (max_pool2d) whose padding test interval bounds prove always true: test dropped, then row-reduction |
| reduction-order | reduction_order.py | other one-axis reductions whose output's last axis is read contiguously (symbolic matmul, column sums): that axis innermost |
| row-reduction | row_reduction.py | reductions over the innermost axes (sum/max/min, softmax, layer_norm, conv2d): register accumulators, 16 lanes for contiguous float32 terms |
| streaming-store | streaming_store.py | elementwise float32 nests (as vector-math, any vector width) whose output is at least the last-level cache: whole vectors with non-temporal stores, long rows in parallel chunks |
| vector-math | vector_math_rows.py | float32 elementwise nests calling exp/erf, contiguous along the innermost loop (512-bit vectors: AVX-512): whole vectors of the target's lanes |
| transpose | transpose.py | copies whose innermost loop reads at a stride of 64+ elements while another loop reads contiguously: 16 x 16 tiles, transposed in registers in blocks of a vector's lanes |
| (every nest) | parallel.py | outer independent loop parallel when the nest is big |

`python bench/schedules.py` times each rule against the plain nests and numpy; the
alternatives that ran slower (conv2d's output width innermost, square transpose
tiles, softmax and layer_norm fused into one loop over rows) are listed with their
figures in docs/performance-notes.md.
"""

from __future__ import annotations

from ...ir import tir
from ..loop_nests import any_loop, has_thread_bindings, top_level
from ..rewrite import collect
from . import (conv2d, gemv, gemv_epilogue, pool, reduction_order, register_tile, row_reduction, streaming_store,
               transpose, vector_math_rows)
from .cpu import CpuInfo, cpu_info
from .inline import inline_elementwise
from .nest import match_nest
from .output_reuse import reuse_output
from .parallel import parallelize

CONFIG_KEY = "tir.default_cpu_schedule"

# (name, module with matches(nest) and apply(nest)): the first rule that matches wins.
RULES = (
    ("gemv", gemv),
    ("register-tile", register_tile),
    ("conv2d", conv2d),
    ("pool", pool),
    ("reduction-order", reduction_order),
    ("row-reduction", row_reduction),
    ("streaming-store", streaming_store),
    ("vector-math", vector_math_rows),
    ("transpose", transpose),
)


def schedule_nest(stmt: tir.Stmt, parallel: bool = True, cpu: CpuInfo = CpuInfo()) -> tir.Stmt:
    """One top-level statement with the first matching rule applied (and made parallel)."""
    nest = match_nest(stmt)
    scheduled = stmt
    if nest is not None:
        for _, rule in RULES:
            if rule.matches(nest, cpu):
                scheduled = rule.apply(nest, cpu)
                break
    return parallelize(stmt, scheduled) if parallel else scheduled


def _fuses_own_epilogue(stmt: tir.Stmt, cpu: CpuInfo) -> bool:
    """Whether a rule that applies the elementwise nests after it in registers takes `stmt`."""
    nest = match_nest(stmt)
    return nest is not None and (conv2d.matches(nest, cpu) or gemv.matches(nest, cpu))


def _arithmetic_only(stages) -> bool:
    """Stages without calls (bias, relu): what the register tile applies in its stores. GELU's erf,
    written out for every tile slot in both k-block branches, would more than double the
    kernel's code (and its build time) for no run-time gain."""
    return not any(collect(stage.store.value, tir.Call) for stage in stages)


_CHEAP_STAGES = [_arithmetic_only]


def _register_tile_with_epilogue(nest, cpu) -> bool:
    """Nests whose elementwise followers the register-tile rule applies in registers (a gemv's took theirs)."""
    return not gemv.matches(nest, cpu) and register_tile.fusable(nest, cpu)


def default_cpu_schedule(func: tir.PrimFunc, target=None) -> tir.PrimFunc:
    """`func` with every top-level loop nest scheduled for a CPU `target`."""
    if func.attrs.get("tir.lowered") or has_thread_bindings(func):
        return func
    if any_loop(func.body, lambda loop: loop.kind != "serial"):
        return func  # already scheduled by hand
    parallel = getattr(target, "num_cores", 0) != 1
    cpu = cpu_info(target)
    prepared = func
    if not any(_fuses_own_epilogue(stmt, cpu) for stmt in top_level(func.body)[0]):
        prepared = reuse_output(inline_elementwise(func))  # elementwise chains as one nest, no workspace
    statements, rebuild = top_level(prepared.body)
    merged, fused = conv2d.fuse_epilogues(statements, prepared, cpu, parallel)  # conv2d + bias/relu nests, scheduled
    merged, fused = gemv.fuse_epilogues(merged, fused, prepared, cpu, parallel)  # gemv + bias/relu/GELU nests
    merged, fused = gemv_epilogue.fuse_following(merged, fused, prepared, cpu, parallel,  # matmul + bias/relu
                                                 _register_tile_with_epilogue, register_tile.apply,
                                                 _CHEAP_STAGES[0])
    scheduled = [stmt if id(stmt) in fused else schedule_nest(stmt, parallel, cpu) for stmt in merged]
    if len(scheduled) == len(statements) and all(a is b for a, b in zip(scheduled, statements)):
        return prepared
    return prepared.with_fields(body=rebuild(scheduled))


def _enabled(value) -> bool:
    return str(value).strip().lower() not in ("0", "false", "off", "no")


def schedule_for_codegen(func: tir.PrimFunc, target=None, context=None) -> tir.PrimFunc:
    """The hook lower_for_codegen calls: the default schedule at -O1 and above on CPU targets
    (`context`: the build's PassContext, the current one when not given)."""
    from ...ir.pass_infra import PassContext

    context = context if context is not None else PassContext.current()
    if context.opt_level < 1 or not _enabled(context.get_config(CONFIG_KEY, True)):
        return func
    if getattr(target, "kind", "llvm") != "llvm":
        return func
    return default_cpu_schedule(func, target)


__all__ = ["CONFIG_KEY", "RULES", "default_cpu_schedule", "schedule_for_codegen", "schedule_nest"]
