"""Refuses TIR buffers whose element type is a vector ("int32x4") or "void", at their declaration.

TVM lets a buffer's elements be vectors: `A[i]` of a `T.Buffer((n,), "float32x4")` then
reads four lanes at once. relaxc's kernels load and store scalar elements (a vector value
comes from a Ramp or Broadcast index over a scalar buffer, which is what TVM's own
schedules print), and the runtime's tensors are numpy arrays of scalars (a Relax tensor
of a vector type is refused likewise, driver/lowering_check.py). Such a buffer reached
LLVM code generation and failed there with an internal error; this check names it where
it is written, with the scalar spelling to use instead.
"""

from __future__ import annotations

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir import dtype as dt
from ..ir import tir_expr as tir
from ..ir import tir_stmt as stmt
from ..ir.analysis import collect


def vector_buffer_diagnostics(mod) -> list[Diagnostic]:
    """One error per buffer (or T.allocate) of a vector element type in `mod`'s PrimFuncs."""
    diagnostics = []
    for name, func in mod.functions.items():
        if not isinstance(func, stmt.PrimFunc):
            continue
        # Buffers first: T.alloc_buffer makes a buffer and its Allocate at one place, named once.
        found = sorted(collect(func, _is_vector_storage), key=lambda node: isinstance(node, stmt.Allocate))
        places = set()
        for node in found:
            place = (node.span.source, node.span.line, node.span.column) if node.span else id(node)
            if place not in places:
                places.add(place)
                diagnostics.append(Diagnostic("error", _message(name, node), node.span))
    return diagnostics


def check_vector_buffers(mod) -> None:
    diagnostics = vector_buffer_diagnostics(mod)
    if diagnostics:
        raise DiagnosticError(diagnostics)


def _is_vector_storage(node) -> bool:
    """Storage of vector elements, or of "void" (no element at all: nothing to load or store)."""
    if not isinstance(node, (tir.Buffer, stmt.Allocate)):
        return False
    return node.dtype == "void" or (dt.is_valid(node.dtype) and dt.lanes(node.dtype) > 1)


def _message(func_name: str, node) -> str:
    what = f"buffer '{node.name}'" if isinstance(node, tir.Buffer) else "an allocation"
    if node.dtype == "void":
        return f"{what} of '{func_name}' has the element type 'void'; a buffer holds numbers, such as \"float32\""
    scalar, lanes = dt.element(node.dtype), dt.lanes(node.dtype)
    return (f"{what} of '{func_name}' has the vector element type '{node.dtype}', which relaxc's kernels "
            f"cannot load or store; use \"{scalar}\" with one more dimension of {lanes}")
