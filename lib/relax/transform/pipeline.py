"""The pass pipelines, one plain list per -O level.

Every level ends in the VM-ready form that CodeGenVM reads; higher levels add the
optimizing passes before the lowering. `relaxc -O2` (the default) runs PIPELINES[2].
"""

# Lowering to the VM: legalize operators, leave dataflow form, make allocations
# explicit, lower them to VM builtins, and route symbolic shapes through the heap.
LOWER_TO_VM = [
    "to-non-dataflow",
    "call-tir-rewrite",
    "vm-builtin-lower",
    "vm-shape-lower",
]

# Clean-ups on the Relax program before its operators become kernels.
SIMPLIFY = [
    "canonicalize-bindings",
    "eliminate-common-subexpr",
    "dead-code-elimination",
]

# The same lowering with planned memory: intermediate tensors share storages by
# lifetime, and every intermediate is dropped right after its last use.
LOWER_TO_VM_PLANNED = [
    "to-non-dataflow",
    "call-tir-rewrite",
    "static-plan-block-memory",
    "kill-after-last-use",
    "vm-builtin-lower",
    "vm-shape-lower",
]

# Every level first normalizes and lifts local functions to the module (closures).
# A module with a device mesh is sharded then (no-ops without one): annotated weights
# become the per-worker program with its collectives (docs/disco.md).
SHARD = ["propagate-sharding", "lower-global-view-to-local-view", "lower-dist-ir"]
FRONT = ["normalize", "lambda-lift", *SHARD]

O0 = [*FRONT, "legalize-ops", *LOWER_TO_VM]
O1 = [*FRONT, *SIMPLIFY, "legalize-ops", "fold-constant", "pack-constant-weights", *LOWER_TO_VM]
# Operator fusion: kernels tagged with their loop pattern, grouped, then merged.
FUSE = [
    "annotate-tir-op-pattern",
    "fuse-ops",
    "fuse-tir",
]

# Constant weights of register-tiled matmuls in their panel layout (the kernels built).
O2 = [*FRONT, *SIMPLIFY, "legalize-ops", "fold-constant", *FUSE, "pack-constant-weights", *LOWER_TO_VM_PLANNED]
O3 = O2

# Passes a build for a kind of target leaves out. pack-constant-weights lays weights out
# for the CPU kernel schedules; the GPU schedules read the plain layouts. `relaxc -S`
# does not know the target and runs it: the rewritten kernels stay correct anywhere.
SKIPPED_FOR_TARGET_KIND = {"cuda": ("pack-constant-weights",)}

PIPELINES = {0: O0, 1: O1, 2: O2, 3: O3}


def pipeline(opt_level: int, target_kind: str | None = None) -> list[str]:
    """The pass names of an -O level (0..3), for targets of `target_kind` when given."""
    if opt_level not in PIPELINES:
        raise ValueError(f"optimization level must be 0..3, got {opt_level}")
    return for_target_kind(PIPELINES[opt_level], target_kind)


def for_target_kind(names, target_kind: str | None) -> list[str]:
    """`names` without the passes that targets of `target_kind` leave out."""
    skipped = SKIPPED_FOR_TARGET_KIND.get(target_kind, ())
    return [name for name in names if name not in skipped]
