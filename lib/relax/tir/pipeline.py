"""The TIR lowering pipeline: schedulable TIR in, the lowered form of
tir/__init__.py out, ready for a code generator.

    lower_for_codegen(prim_func, target, context) -> prim_func

The passes run in the order of `passes(target, context)`, a plain list. `context`
(an ir.pass_infra.PassContext) is the build's configuration, handed down: its -O
level and pass config decide whether the default schedules run.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.pass_infra import PassContext
from .annotate_storage import AnnotateStorage
from .convert_blocks_to_loops import ConvertBlocksToLoops
from .default_cpu_schedule import DefaultCPUSchedule
from .flatten_buffers import FlattenBuffers
from .lower_attr_stmts import LowerAttrStmts
from .narrow_division import NarrowDivision
from .schedule import schedule_for_codegen
from .simplify import Simplify
from .split_divided_loops import SplitDividedLoops
from .verify_lowered import VerifyLowered


def passes(target=None, context: PassContext | None = None) -> list:
    context = context if context is not None else PassContext.current()
    if getattr(target, "kind", "llvm") == "cuda":
        # gpu_schedule/: its rules, else the default GPU schedule (imported here: a CPU
        # build never loads the GPU schedules)
        from .gpu_schedule import GPUSchedule, rules_enabled as gpu_rules_enabled, tile_of as matmul_tile_of
        from .gpu_schedule.matmul_mma import enabled as tensor_cores_enabled

        schedule = [GPUSchedule(target.max_threads_per_block, rules=gpu_rules_enabled(context),
                                matmul_tile=matmul_tile_of(context),
                                tensor_cores=tensor_cores_enabled(context, target))]
    else:
        single_core = getattr(target, "num_cores", 0) == 1
        schedule = [] if single_core else [DefaultCPUSchedule()]
    return schedule + [
        ConvertBlocksToLoops(),
        LowerAttrStmts(),
        FlattenBuffers(),
        Simplify(),
        SplitDividedLoops(),
        NarrowDivision(),
        AnnotateStorage(),
        VerifyLowered(target),
    ]


def lower_for_codegen(func: tir.PrimFunc, target=None, context: PassContext | None = None) -> tir.PrimFunc:
    """`func` lowered for `target` (a relax.target.Target; None means a CPU) under the build
    configuration `context` (the current PassContext when not given)."""
    context = context if context is not None else PassContext.current()
    func = schedule_for_codegen(func, target, context)  # tir/schedule/: default CPU schedules at -O1 and up
    for tir_pass in passes(target, context):
        func = tir_pass.run(func)
    # No blocks are left: the function is no longer S-TIR, whether its text said
    # `s_tir=True` (a parsed .vms) or not (built in memory); both lower alike.
    return func.with_fields(attrs=func.attrs.without("s_tir").updated(**{"tir.lowered": True}))
