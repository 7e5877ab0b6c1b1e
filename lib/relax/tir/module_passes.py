"""The TIR passes as module passes, for `relaxc --passes` and the pass instruments.

Each registered pass applies its TIR pass (same name) to every PrimFunc of the
module and leaves Relax functions alone; `lower-tir` runs the whole
`lower_for_codegen` pipeline. Passes that depend on the target read the pass
config key TARGET_CONFIG (`--pass-config tir.target="cuda -arch=sm_80"`); without
it the target is this host. Importing this module registers them.
"""

from __future__ import annotations

from ..ir.module import IRModule
from ..ir.pass_infra import Pass, PassContext, register_pass
from .annotate_storage import AnnotateStorage
from .convert_blocks_to_loops import ConvertBlocksToLoops
from .default_cpu_schedule import DefaultCPUSchedule
from .default_gpu_schedule import DefaultGPUSchedule
from .flatten_buffers import FlattenBuffers
from .gpu_schedule import GPUSchedule
from .gpu_schedule import tile_of as matmul_tile_of
from .gpu_schedule.matmul_mma import enabled as tensor_cores_enabled
from .lower_attr_stmts import LowerAttrStmts
from .narrow_division import NarrowDivision
from .pipeline import lower_for_codegen
from .simplify import Simplify
from .split_divided_loops import SplitDividedLoops
from .verify_lowered import VerifyLowered

TARGET_CONFIG = "tir.target"


def config_target():
    """The target named by the pass config, or this host."""
    from ..target import Target

    spec = PassContext.current().get_config(TARGET_CONFIG)
    return Target.parse(spec) if spec else Target.host()


def _map_prim_funcs(mod: IRModule, transform) -> IRModule:
    for name, func in mod.prim_funcs().items():
        new = transform(func)
        if new is not func:
            mod = mod.with_function(name, new)
    return mod


def _summary(module_doc: str | None) -> str:
    first = (module_doc or "").strip().splitlines()[0] if module_doc else ""
    return "TIR: " + first.split(": ", 1)[-1]


def _make(tir_pass_factory, name: str, summary: str) -> type[Pass]:
    def run(self, mod: IRModule) -> IRModule:
        tir_pass = tir_pass_factory()
        return _map_prim_funcs(mod, tir_pass.run)

    return register_pass(type(name.title().replace("-", ""), (Pass,), {"name": name, "__doc__": summary, "run": run}))


# (pass name, how to make the TIR pass): one row per pass, in pipeline order.
_TABLE = (
    (DefaultCPUSchedule, DefaultCPUSchedule),
    (DefaultGPUSchedule, lambda: DefaultGPUSchedule(max(1, config_target().max_threads_per_block or 1024))),
    (GPUSchedule, lambda: GPUSchedule(max(1, config_target().max_threads_per_block or 1024),
                                      matmul_tile=matmul_tile_of(PassContext.current()),
                                      tensor_cores=tensor_cores_enabled(PassContext.current(), config_target()))),
    (ConvertBlocksToLoops, ConvertBlocksToLoops),
    (LowerAttrStmts, LowerAttrStmts),
    (FlattenBuffers, FlattenBuffers),
    (Simplify, Simplify),
    (SplitDividedLoops, SplitDividedLoops),
    (NarrowDivision, NarrowDivision),
    (AnnotateStorage, AnnotateStorage),
    (VerifyLowered, lambda: VerifyLowered(config_target())),
)

MODULE_PASSES = {
    cls.name: _make(factory, cls.name, _summary(__import__(cls.__module__, fromlist=["_"]).__doc__))
    for cls, factory in _TABLE
}


@register_pass
class LowerTIR(Pass):
    """TIR: every PrimFunc in the lowered form for code generation (the whole pipeline)"""

    name = "lower-tir"

    def run(self, mod: IRModule) -> IRModule:
        target = config_target()
        return _map_prim_funcs(mod, lambda func: lower_for_codegen(func, target))
