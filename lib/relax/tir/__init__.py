"""TIR passes: schedulable PrimFuncs become the lowered form a code generator reads.

Sits between the operator legalization (which writes PrimFuncs with blocks) and
codegen/. `lower_for_codegen(func, target)` (pipeline.py) runs, in order:
default-cpu-schedule (llvm targets, unless -num-cores=1) or default-gpu-schedule
(cuda targets), convert-blocks-to-loops,
lower-attr-stmts, flatten-buffers, simplify, narrow-division, annotate-storage,
verify-lowered.
Each pass is a file named after it.
interpreter.py runs any PrimFunc (both forms) on numpy arrays, exactly and slowly:
the reference that tests compare lowered code against.

THE LOWERED FORM (what the code generators may rely on; verify_lowered.py checks it)

- No Block, BlockRealize, AttrStmt or match_buffer anywhere.
- Statements are only: SeqStmt, For, IfThenElse, LetStmt, Allocate, DeclBuffer,
  BufferStore, Evaluate, AssertStmt, While. For kinds are "serial", "parallel",
  "vectorized", "unrolled"; "thread_binding" (with `thread_tag`) only for a cuda
  target. For a cuda target every top-level statement (after the parameter
  DeclBuffers and root allocations) is a `blockIdx.x` loop around a `threadIdx.x`
  loop: one kernel launch each, in order.
- Every BufferLoad/BufferStore has exactly one index, into a 1-D buffer. A vector
  access has a Ramp (or Broadcast) index and a vector dtype.
- `buffer_map` keeps each parameter's ORIGINAL buffer (N-D shape, dtype, symbolic
  shape variables): that is the kernel ABI. The body begins with one DeclBuffer per
  parameter buffer declaring its flat view: a 1-D buffer over the same `data` var
  whose extent is the element count (a new buffer even when the parameter is 1-D:
  the body never uses buffer_map's buffers).
  Buffers are compact and row-major (the VM hands kernels compact buffers).
- Allocate has one extent (elements of its dtype) and is directly followed by the
  DeclBuffer of its flat view; `annotations["storage"]` is "stack" (a constant size
  of at most 64 KiB: an alloca in the entry block) or "workspace" (larger or
  symbolic: from the runtime's workspace allocator, freed when the body ends); a GPU
  scope's allocation is annotated with its scope name ("shared", "local").
- Integer division keeps TVM's node semantics: Div/Mod on integers truncate toward
  zero (C's / and %), FloorDiv/FloorMod round toward negative infinity (Python's //
  and %). Where the dividend is provably non-negative and the divisor a positive
  constant the two agree: simplify works with the floor forms there, and
  narrow-division then writes Div/Mod (one sdiv/srem, no sign fix-up). Codegen
  implements all four as defined. On floats, Div is true division,
  FloorDiv is floor(a / b), Mod is fmod and FloorMod is a - floor(a / b) * b.
- Index expressions are simplified with the loop ranges known; floats are never
  reassociated.
- `attrs["tir.lowered"]` is True.
"""

from ..lazy_names import lazy_names
from .errors import LoweringError

__all__ = ["LoweringError", "lower_for_codegen", "passes", "run"]

# The pipeline reaches the CPU model, hence the kernel runtime and LLVM: imported when
# first asked for, so that a module importing one TIR helper (the simplifier, for the
# operators' shape arithmetic) does not load the lowering and LLVM with it.
__getattr__ = lazy_names(__name__, {"lower_for_codegen": ".pipeline", "passes": ".pipeline", "run": ".interpreter"})
