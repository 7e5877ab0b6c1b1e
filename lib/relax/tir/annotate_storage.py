"""annotate-storage: decides where each intermediate allocation lives.

Each Allocate gets `annotations["storage"]` (STORAGE_KEY), which the code generator
reads. "stack": a constant size of at most STACK_LIMIT_BYTES; the code generator makes it
a stack slot (alloca) in the kernel's entry block. "workspace": a larger or symbolic
size; the code generator takes it from the runtime's workspace allocator and gives
it back when the Allocate's body ends. Allocations in a GPU memory scope ("shared",
"local", "warp", ...) are annotated with their scope's name instead: they belong to
the CUDA code generator.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from .rewrite import Rewriter

STORAGE_KEY = "storage"
STACK_LIMIT_BYTES = 64 * 1024
STORAGE_KINDS = ("stack", "workspace")
_HOST_SCOPES = ("global", "")


def allocation_bytes(alloc: tir.Allocate) -> int | None:
    """The constant size of an allocation in bytes, or None when it is symbolic."""
    count = 1
    for extent in alloc.extents:
        if not isinstance(extent, tir.IntImm):
            return None
        count *= extent.value
    return count * dt.itemsize(alloc.dtype)


def storage_of(alloc: tir.Allocate) -> str:
    if alloc.scope not in _HOST_SCOPES:
        return alloc.scope
    size = allocation_bytes(alloc)
    return "stack" if size is not None and size <= STACK_LIMIT_BYTES else "workspace"


class _Annotator(Rewriter):
    statements_only = True

    def visit_Allocate(self, alloc):
        body = self.visit(alloc.body)
        annotations = alloc.annotations.updated(**{STORAGE_KEY: storage_of(alloc)})
        return alloc.with_fields(body=body, annotations=annotations)


class AnnotateStorage:
    """The pass object: `AnnotateStorage().run(func)`.

    Before:

        A = T.allocate([256], "float32", "global")           # 1 KiB
        B = T.allocate([n * 1024], "float32", "global")      # symbolic

    After (the annotation the code generator reads, key STORAGE_KEY):

        A = T.allocate([256], "float32", "global", annotations={"storage": "stack"})
        B = T.allocate([n * 1024], "float32", "global", annotations={"storage": "workspace"})
    """

    name = "annotate-storage"

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        return func.with_fields(body=_Annotator().visit(func.body))
