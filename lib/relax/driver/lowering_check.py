"""Whether relaxc's pipeline lowered every operator, reported where the user wrote it.

    model.relax:8:13: error: R.sum cannot be compiled: its kernel needs the shape of every
    tensor it reads, and 'x' is R.Tensor(dtype="float32"); annotate a shape or rank such
    as R.Tensor((n, 4), "float32"), or use R.match_cast

After the -O pipeline a Relax function calls only VM operators, packed functions and
other functions. An operator call still there has no bytecode: legalize-ops left it
(it builds a kernel only for tensors of known rank and dtype) or nothing lowers that
operator at all. relaxc checks this before it prints the lowered module, so that the
error names the call in the user's file; the one-shot's bytecode locates its
instructions in that module's text, kept in memory, and a location in it would name a
file that does not exist. A call the
user did not write there (a pass made it) or one legalize-ops had all it needs for
is relaxc's bug: an internal error (exit 70), not the user's.

What the lowered module does not read back (where the one-shot reads it back) or
assemble after the default pipeline is the toolchain's own fault: `reading_lowered`
makes it an internal error.
"""

from __future__ import annotations

import contextlib

from ..diagnostics import Diagnostic, DiagnosticError
from .compile_steps import VM_READY_OPERATORS


def check_lowered(mod, passes: tuple[str, ...], options) -> None:
    """Reports every operator call of `mod` that bytecode cannot express (after the
    passes `passes`), at the call in the source. After the default pipeline, a call at
    no source location, one a pass made (the source there calls something else), or one
    that legalize-ops had all it needs for and still left, is relaxc's own bug
    (RuntimeError, exit 70): only the user's call of an operator nothing lowers, or with
    an operand or result of unknown shape or dtype, is the user's to fix (exit 1)."""
    from ..ir import expr as rx
    from ..ir.analysis import collect

    def unlowered(node) -> bool:
        return (isinstance(node, rx.VarBinding) and isinstance(node.value, rx.Call)
                and isinstance(node.value.op, rx.Op) and not node.value.op.name.startswith(VM_READY_OPERATORS))

    default = default_pipeline(options)
    legalized = "legalize-ops" in passes and "legalize-ops" not in options.disabled
    diagnostics, bugs = [], []
    for func in mod.relax_functions().values():
        for binding in collect(func, unlowered):
            message, users = _reason(binding, legalized, default)
            span = binding.value.span or binding.span
            if default and (span is None or not users or not _written_at(binding.value.op.name, span)):
                bugs.append(f"{span}: {message}" if span is not None else message)
            else:
                diagnostics.append(Diagnostic("error", message, span))
    if diagnostics:
        raise DiagnosticError(_dedup_sorted(diagnostics))
    if bugs:
        # A legal program whose operators the default pipeline did not lower: relaxc's fault.
        raise RuntimeError(f"the pipeline left a call it cannot lower in a legal program ({bugs[0]})")


def _written_at(op_name: str, span) -> bool:
    """Whether the source text at `span` calls the operator `op_name` (`R.nn.conv2d(`):
    a call a pass made (R.invoke_closure for a local function) is not the user's."""
    import re

    from ..diagnostics import SOURCES

    line = SOURCES.line(span.source, span.line)
    callee = re.match(r"[A-Za-z_][\w.]*", line[span.column - 1:]) if line is not None else None
    short = op_name.removeprefix("relax.")
    return callee is not None and (callee.group() == short or callee.group().endswith("." + short))


def check_scalar_tensors(mod) -> None:
    """Refuses Relax tensors and R.Prim values whose data type the runtime cannot hold,
    which TVM's printer writes and the parser reads, at their annotation. The runtime
    holds tensors as numpy arrays: their elements are scalars (not "float32x4") of a type
    numpy has (not "float8_e4m3fn", "bfloat16" or "int4"), and numbers (not "handle")."""
    from ..ir import dtype as dt
    from ..ir.analysis import collect
    from ..ir.struct_info import PrimStructInfo, TensorStructInfo

    def unsupported(node) -> bool:
        return (isinstance(node, (TensorStructInfo, PrimStructInfo)) and node.dtype != "void"
                and node.dtype not in dt.SUPPORTED_NUMPY)

    diagnostics = []
    for func in mod.relax_functions().values():
        for info in collect(func, unsupported):
            diagnostics.append(Diagnostic("error", _unsupported_dtype_message(info), info.span))
    if diagnostics:
        raise DiagnosticError(_dedup_sorted(diagnostics))


def _unsupported_dtype_message(info) -> str:
    """Why a TensorStructInfo or PrimStructInfo's dtype (not one of dt.SUPPORTED_NUMPY)
    cannot be compiled."""
    from ..ir import dtype as dt
    from ..ir.struct_info import TensorStructInfo

    kind = "relax tensors" if isinstance(info, TensorStructInfo) else "R.Prim values"
    if dt.is_valid(info.dtype) and dt.lanes(info.dtype) > 1:
        scalar, lanes = dt.element(info.dtype), dt.lanes(info.dtype)
        instead = (f"\"{scalar}\" with one more dimension of {lanes}" if isinstance(info, TensorStructInfo)
                   else f"R.Tensor(({lanes},), \"{scalar}\")")
        return (f"{kind} cannot have the vector data type '{info.dtype}'"
                f" (the runtime's arrays hold scalars); use {instead}")
    return f"{kind} cannot have the data type '{info.dtype}'; the supported ones are {', '.join(dt.SUPPORTED_NUMPY)}"


def _dedup_sorted(diagnostics: list) -> list:
    """In source order, each location once (struct info nodes are shared between uses)."""
    unique = {(d.span.source, d.span.line, d.span.column) if d.span else ("", 0, id(d)): d for d in diagnostics}
    return [unique[key] for key in sorted(unique)]


def _reason(binding, legalized: bool, default_pipeline: bool) -> tuple[str, bool]:
    """Why the call of `binding` was not lowered, and whether that is the user's to fix
    (an operator nothing lowers, an operand or result whose shape or dtype is unknown).
    Otherwise legalize-ops had everything it needs and still left the call: a bug."""
    from ..ir.struct_info import TensorStructInfo, TupleStructInfo
    from ..ir.struct_info_check import describe
    from ..op import registry

    call = binding.value
    name = "R." + call.op.name.removeprefix("relax.")
    op = registry.get(call.op.name)
    if not default_pipeline and (not legalized or op is None or op.legalize is None):
        return f"{name} is left by the passes run (--passes, --disable-pass): the VM has no instruction for it", True
    if op is None or op.legalize is None:
        return f"{name} is not supported by relaxc: nothing lowers it to the VM", True
    for arg in call.args:
        info = getattr(arg, "struct_info", None)
        for leaf in info.fields if isinstance(info, TupleStructInfo) else (info,):
            if isinstance(leaf, TensorStructInfo) and (leaf.shape_values is None or leaf.dtype == "void"):
                what = f"'{arg.name_hint}'" if hasattr(arg, "name_hint") else "an operand"
                return (f"{name} cannot be compiled: its kernel needs the shape and dtype of every tensor it"
                        f" reads, and {what} is {describe(leaf)}; annotate them, such as"
                        f" R.Tensor((n, 4), \"float32\"), or use R.match_cast"), True
    result = binding.var.struct_info
    if isinstance(result, TensorStructInfo) and result.shape_values is None:
        return (f"{name} cannot be compiled: the shape of its result, {describe(result)}, is not known"
                f" when its kernel is built; annotate it or use R.match_cast"), True
    operands = ", ".join(describe(getattr(arg, "struct_info", None)) for arg in call.args)
    return f"legalize-ops left {name} for these operands ({operands})", not legalized


def default_pipeline(options) -> bool:
    """Whether relaxc runs its whole -O pipeline (no --passes, no --disable-pass)."""
    return options.passes is None and not options.disabled


@contextlib.contextmanager
def reading_lowered(name: str, default: bool):
    """Within: diagnostics about the one-shot's in-memory .vms (`name`). After the
    default pipeline they are the toolchain's fault (the printer or a pass made a
    module that does not read back or assemble): an internal error, exit 70. After
    --passes they may be the user's, and a note says where that module can be seen."""
    try:
        yield
    except DiagnosticError as error:
        if not default:
            note = Diagnostic("note", f"{name} is the module after the passes run, which the one-shot keeps in"
                                      " memory; `relaxc -S` with the same options writes it")
            raise DiagnosticError([*error.diagnostics, note]) from None
        first = error.diagnostics[0]
        where = f"{first.span}: " if first.span is not None else ""
        raise RuntimeError(f"the lowered module does not assemble ({where}{first.message});"
                           f" `relaxc -S` writes it as {name}") from None
