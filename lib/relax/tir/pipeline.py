"""The TIR lowering pipeline: schedulable TIR in, the lowered form of
tir/__init__.py out, ready for a code generator.

    lower_for_codegen(prim_func, target) -> prim_func

The passes run in the order of `passes(target)`, a plain list.
"""

from __future__ import annotations

from ..ir import tir
from .annotate_storage import AnnotateStorage
from .convert_blocks_to_loops import ConvertBlocksToLoops
from .default_cpu_schedule import DefaultCPUSchedule
from .gpu_schedule import GPUSchedule
from .flatten_buffers import FlattenBuffers
from .lower_attr_stmts import LowerAttrStmts
from .narrow_division import NarrowDivision
from .schedule import schedule_for_codegen
from .simplify import Simplify
from .verify_lowered import VerifyLowered


def passes(target=None) -> list:
    if getattr(target, "kind", "llvm") == "cuda":
        schedule = [GPUSchedule(target.max_threads_per_block)]  # gpu_schedule/: rules, else the default
    else:
        single_core = getattr(target, "num_cores", 0) == 1
        schedule = [] if single_core else [DefaultCPUSchedule()]
    return schedule + [
        ConvertBlocksToLoops(),
        LowerAttrStmts(),
        FlattenBuffers(),
        Simplify(),
        NarrowDivision(),
        AnnotateStorage(),
        VerifyLowered(target),
    ]


def lower_for_codegen(func: tir.PrimFunc, target=None) -> tir.PrimFunc:
    """`func` lowered for `target` (a relax.target.Target; None means a CPU)."""
    func = schedule_for_codegen(func, target)  # tir/schedule/: default CPU schedules at -O1 and up
    for tir_pass in passes(target):
        func = tir_pass.run(func)
    return func.with_fields(attrs=func.attrs.updated(**{"tir.lowered": True}))
