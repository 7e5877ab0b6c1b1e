"""verify-lowered: checks that a PrimFunc is in the lowered form codegen accepts.

The form is described in tir/__init__.py. `verify_lowered(func, target)` returns
the list of violations (empty when the function conforms); `VerifyLowered().run`
raises a LoweringError naming them all. The pipeline runs it last, so a code
generator never sees a block, a multi-dimensional access or an unannotated
allocation.
"""

from __future__ import annotations

from ..ir import tir
from .annotate_storage import STORAGE_KEY
from .errors import LoweringError
from .rewrite import walk

ALLOWED_STATEMENTS = (
    tir.SeqStmt, tir.For, tir.IfThenElse, tir.LetStmt, tir.Allocate, tir.DeclBuffer,
    tir.BufferStore, tir.Evaluate, tir.AssertStmt, tir.While,
)


def verify_lowered(func: tir.PrimFunc, target=None) -> list[str]:
    problems: list[str] = []
    gpu = target is not None and getattr(target, "kind", "") == "cuda"
    body_buffers = []

    def check(node):
        if isinstance(node, tir.Stmt) and not isinstance(node, ALLOWED_STATEMENTS):
            problems.append(f"statement {type(node).__name__} is not allowed after lowering")
        if isinstance(node, (tir.BufferLoad, tir.BufferStore)):
            if len(node.indices) != 1:
                problems.append(f"access to '{node.buffer.name}' has {len(node.indices)} indices")
            body_buffers.append(node.buffer)
        if isinstance(node, tir.DeclBuffer):
            body_buffers.append(node.buffer)
        if isinstance(node, tir.Allocate):
            if len(node.extents) != 1:
                problems.append(f"allocation '{node.buffer_var.name}' has {len(node.extents)} extents")
            if not (isinstance(node.body, tir.DeclBuffer) and node.body.buffer.data is node.buffer_var):
                problems.append(f"allocation '{node.buffer_var.name}' is not followed by its DeclBuffer")
            if STORAGE_KEY not in node.annotations:
                problems.append(f"allocation '{node.buffer_var.name}' has no '{STORAGE_KEY}' annotation")
        if isinstance(node, tir.For) and node.kind == "thread_binding" and not gpu:
            problems.append(f"loop '{node.loop_var.name}' is bound to {node.thread_tag or 'a thread'}, "
                            "which needs a cuda target")

    walk(func.body, check, (tir.Stmt, tir.BufferLoad))  # the nodes check looks at
    seen = set()
    for buffer in body_buffers:
        if id(buffer) not in seen and len(buffer.shape) != 1:
            problems.append(f"buffer '{buffer.name}' has {len(buffer.shape)} dimensions in the body")
        seen.add(id(buffer))
    return list(dict.fromkeys(problems))


class VerifyLowered:
    """The pass object: `VerifyLowered(target).run(func)` returns `func` or raises."""

    name = "verify-lowered"

    def __init__(self, target=None):
        self.target = target

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        problems = verify_lowered(func, self.target)
        if problems:
            raise LoweringError("the function is not in lowered form: " + "; ".join(problems))
        return func
