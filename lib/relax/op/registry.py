"""The operator registry: one OpDef per Relax operator, the data every stage reads.

The parser, the printer, struct-info inference, fusion and legalization all look
operators up here by their registered name ("relax.add", "relax.nn.conv2d"); the
TVMScript spelling is derived from it ("R.add", "R.nn.conv2d").
"""

from __future__ import annotations

import difflib
from dataclasses import field
from typing import Any, Callable

from ..diagnostics import DiagnosticError, error
from ..ir import expr as rx
from ..ir.node import FrozenDict
from ..ir.struct_info import StructInfo
from ..records import record

# Fusion pattern kinds, from most to least fusable (TVM's OpPatternKind).
PATTERN_KINDS = ("elementwise", "broadcast", "injective", "comm_reduce", "out_elementwise_fusable", "tuple", "opaque")

REQUIRED = object()


@record
class AttrSpec:
    """A keyword attribute: its default (REQUIRED if none) and an optional check that
    returns an error message for a bad value."""

    name: str
    default: Any = REQUIRED
    check: Callable[[Any], str | None] | None = None
    doc: str = ""

    def problem(self, value) -> str | None:
        """What is wrong with `value` for this attribute (None if nothing): its own check,
        or for an integer attribute (INTEGER_ATTRS) that it is None, an int or ints."""
        if self.check is not None:
            return self.check(value)
        return ints_check(value) if self.name in INTEGER_ATTRS else None


# Attributes that hold axes, counts or indices in every operator that has them (TVM
# declares them as integers). Checked so that a float (axis=-0.0) is an error at the
# call, not a TypeError where inference indexes with it.
INTEGER_ATTRS = frozenset({
    "axis", "axes", "repeats", "indices_or_sections", "k", "depth", "axis_separators",
    "input_axis_separators", "inplace_indices", "cubic_exclude", "device_type", "index",
})


def ints_check(value) -> str | None:
    def is_int(item) -> bool:
        return isinstance(item, int) and not isinstance(item, bool)

    if value is None or is_int(value) or isinstance(value, tuple) and all(is_int(v) for v in value):
        return None
    return "expected None, an int or a list of ints"


@record
class OpDef:
    name: str
    args: tuple[str, ...]  # positional Relax arguments; a trailing "*name" is variadic
    attrs: tuple[AttrSpec, ...]
    infer: Callable[["OpCall"], StructInfo]
    pattern: str = "opaque"
    legalize: Callable[["OpCall", Any], rx.Expr] | None = None
    doc: str = ""
    pure: bool = True

    @property
    def script_name(self) -> str:
        return "R." + self.name.removeprefix("relax.")

    def signature(self) -> str:
        parts = list(self.args)
        for attr in self.attrs:
            parts.append(attr.name if attr.default is REQUIRED else f"{attr.name}={attr.default!r}")
        return f"{self.script_name}({', '.join(parts)})"


@record
class OpCall:
    """A call to an operator with its arguments checked and its attributes completed:
    what inference and legalization receive."""

    op: OpDef
    call: rx.Call
    args: tuple[rx.Expr, ...]
    arg_info: tuple[StructInfo, ...]
    attrs: FrozenDict = field(default_factory=FrozenDict)

    def error(self, message: str) -> DiagnosticError:
        return error(f"{message} in {self.op.script_name}", self.call.span)


REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.pattern not in PATTERN_KINDS:
        raise ValueError(f"{op.name}: unknown pattern kind {op.pattern!r}")
    if op.name in REGISTRY:
        raise ValueError(f"operator {op.name} registered twice")
    REGISTRY[op.name] = op
    return op


# The modules that register operators, one per family; importing one registers it. get()
# imports only the family of the name it is asked for (family_index.py), the others all.
FAMILY_MODULES = (
    "binary",
    "unary",
    "activation",
    "reduction",
    "normalization",
    "linear_algebra",
    "manipulation",
    "creation",
    "call",
    "nn_conv",
    "nn_conv_nd",
    "nn_pool",
    "nn_pool_nd",
    "nn_misc",
    "nn_norm",
    "nn_attention",
    "nn_loss",
    "nn_instance_norm",
    "image",
    "image_3d",
    "image_grid",
    "indexing",
    "indexing_nd",
    "slice_update",
    "sorting",
    "math_ext",
    "creation_ext",
    "quantize",
    "tensor_ext",
    "tensor_inspect",
    "training",
    "grad_backward",
    "vision",
    "vision_nms",
    "vision_detection",
    "ccl",
    "dist",
)


_families_loaded = False


def _load_families() -> None:
    """Imports every family module once. (Not "when the registry is empty": importing
    one family directly must not hide the others.)"""
    global _families_loaded
    if _families_loaded:
        return
    _families_loaded = True
    import importlib

    for module in FAMILY_MODULES:
        importlib.import_module(f"{__package__}.{module}")


def get(name: str) -> OpDef | None:
    op = REGISTRY.get(name)
    if op is None and not _families_loaded:
        _load_family_of(name)
        op = REGISTRY.get(name)
    return op


def _load_family_of(name: str) -> None:
    """Imports the family that registers `name` (family_index.py); every family when the
    index names none that does: an unknown name, or an index behind the families."""
    from .family_index import FAMILY_OF

    family = FAMILY_OF.get(name)
    if family is not None:
        import importlib

        importlib.import_module(f"{__package__}.{family}")
    if name not in REGISTRY:
        _load_families()


def all_ops() -> list[OpDef]:
    _load_families()
    return sorted(REGISTRY.values(), key=lambda op: op.name)


def suggest(name: str) -> str | None:
    """The registered name closest to an unknown one, for 'did you mean' hints."""
    _load_families()
    matches = difflib.get_close_matches(name, REGISTRY.keys(), n=1, cutoff=0.6)
    return matches[0] if matches else None


def list_ops_text() -> str:
    """What `relaxc --list-ops` prints: every operator with its signature and pattern."""
    lines = [f"{op.signature()}    [{op.pattern}]" for op in all_ops()]
    return "\n".join(lines) + "\n"
