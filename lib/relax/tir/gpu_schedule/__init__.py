"""Default GPU schedules: each kernel's loop nests bound to GPU blocks and threads by their structure.

Runs on block-form PrimFuncs (what legalization and FuseTIR write) for cuda
targets, before convert-blocks-to-loops. Each top-level nest (schedule/nest.py's
Nest: perfect serial loops around one block) is matched against RULES in order;
the first that matches rewrites it into thread_binding loops. A nest no rule
matches exactly, or a statement that is no Nest, goes to the fallback, the
DefaultGPUSchedule of default_gpu_schedule.py (spatial loops fused onto blockIdx.x
x threadIdx.x, reductions serial per thread: always correct).

| rule | file | matches |
| --- | --- | --- |
| matmul-mma | matmul_mma.py | a float16 matmul, when the pass config "tir.gpu_tensor_cores" is on and the arch is sm_80+: mma.sync on the tensor cores |
| matmul | matmul.py | C[.., i, j] += f(A[.., i, k], B[.., k, j]) (B may be transposed): shared-memory tiles, a register tile per thread |
| row-reduction | reduction.py | sum/max/min over the innermost axes: a block per row, warp shuffles, a cross-warp step in shared memory |
| elementwise | elementwise.py | nests without reduction: flattened, several elements per thread |
| (fallback) | ../default_gpu_schedule.py | everything else |

The pass-config key CONFIG_KEY ("tir.default_gpu_schedule") set to 0/false, or -O0,
keeps only the fallback (the schedule before these rules existed), for comparison.
The key "tir.gpu_matmul_tile" ("SIDExREGxK_STEP", e.g. "16x8x16") sets the matmul
rule's block shape, which it otherwise chooses by the output's size (matmul.py).
"""

from __future__ import annotations

from ...ir import tir
from ...records import record
from ..default_gpu_schedule import schedule_nest as fallback_nest
from ..loop_nests import has_thread_bindings, top_level
from ..schedule.nest import match_nest
from . import elementwise, matmul, matmul_mma, reduction
from .matmul import MatmulTile, tile_of

CONFIG_KEY = "tir.default_gpu_schedule"

# (name, module with matches(nest, options) and apply(nest, options, name)): the first match wins.
RULES = (
    ("matmul-mma", matmul_mma),
    ("matmul", matmul),
    ("row-reduction", reduction),
    ("elementwise", elementwise),
)


@record
class GpuOptions:
    threads: int = 1024  # the target's max_threads_per_block
    matmul_tile: MatmulTile | None = None  # the matmul rule's block shape; None: by size (matmul.py)
    tensor_cores: bool = False  # float16 matmuls on mma.sync (matmul_mma.py)


def choose_rule(stmt: tir.Stmt, options: GpuOptions = GpuOptions()) -> str:
    """The name of the rule that schedules `stmt`, or "fallback"."""
    nest = match_nest(stmt)
    if nest is not None:
        for name, rule in RULES:
            if rule.matches(nest, options):
                return name
    return "fallback"


def schedule_nest(stmt: tir.Stmt, options: GpuOptions, name: str, rules: bool = True) -> tir.Stmt:
    chosen = choose_rule(stmt, options) if rules else "fallback"
    if chosen == "fallback":
        return fallback_nest(stmt, options.threads, name)
    return dict(RULES)[chosen].apply(match_nest(stmt), options, name)


def _enabled(value) -> bool:
    return str(value).strip().lower() not in ("0", "false", "off", "no")


def rules_enabled(context) -> bool:
    """Whether the rules run under the PassContext `context`: at -O1 and up, unless its
    config turns them off (CONFIG_KEY)."""
    return context.opt_level >= 1 and _enabled(context.get_config(CONFIG_KEY, True))


class GPUSchedule:
    """The pass object: `GPUSchedule(max_threads_per_block).run(func)`; see the module docstring.

    Before:                                   After (row-reduction):

        for i, k in T.grid(7, 13):                for bx in T.thread_binding(7, "blockIdx.x"):
            with T.block("sum"): ...                  for tx in T.thread_binding(32, "threadIdx.x"): ...warp shuffles...
    """

    name = "gpu-schedule"

    def __init__(self, max_threads_per_block: int = 1024, rules: bool | None = None,
                 matmul_tile: MatmulTile | None = None, tensor_cores: bool = False):
        self.options = GpuOptions(max_threads_per_block, matmul_tile, tensor_cores)
        self.rules = rules

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        if has_thread_bindings(func):
            return func
        rules = self.rules
        if rules is None:  # run as a pass of its own (--passes gpu-schedule): its context decides
            from ...ir.pass_infra import PassContext

            rules = rules_enabled(PassContext.current())
        statements, rebuild = top_level(func.body)
        scheduled = [schedule_nest(stmt, self.options, f"k{index}", rules) for index, stmt in enumerate(statements)]
        return func.with_fields(body=rebuild(scheduled))


__all__ = ["CONFIG_KEY", "GPUSchedule", "GpuOptions", "MatmulTile", "RULES", "choose_rule", "rules_enabled",
           "schedule_nest", "tile_of"]
