"""What an operator table row sees, and the row builders both backends share.

A backend (numpy_ops.py, torch_ops.py) is a `Backend`: the import lines a converted
function starts with, its tensor constructor, and `ops`, one row per Relax operator
name: a function from an `OpCall` (the argument texts, the attributes, the struct info
of the arguments and the result) to a Python expression. The statement writer
(writer.py) never names an operator; it looks the row up and fails, naming the
operator, when there is none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field

from ..diagnostics import UserError, error
from ..ir import expr as rx
from ..ir.struct_info import StructInfo, TensorStructInfo
from ..records import record


@record
class OpCall:
    call: rx.Call
    args: list[str]
    arg_infos: list[StructInfo | None]
    out: StructInfo | None
    op_name: str = ""
    attrs: Mapping = field(default_factory=dict)  # the call's attributes over the registry's defaults

    @staticmethod
    def of(call: rx.Call, args: list[str], arg_infos: list, out) -> "OpCall":
        from ..op.registry import REQUIRED, get

        definition = get(call.op.name)
        defaults = {spec.name: spec.default for spec in (definition.attrs if definition else ())
                    if spec.default is not REQUIRED}
        return OpCall(call, args, arg_infos, out, call.op.name, {**defaults, **call.attrs})

    def attr(self, key, default=None):
        return self.attrs.get(key, default)

    @property
    def out_dtype(self) -> str | None:
        """The result's dtype: the `dtype` attribute where the operator has one, else the
        struct info's."""
        if self.attrs.get("dtype") not in (None, "", "void"):
            return self.attrs["dtype"]
        return self.out.dtype if isinstance(self.out, TensorStructInfo) and self.out.dtype != "void" else None

    def arg_ndim(self, index: int) -> int:
        info = self.arg_infos[index]
        return info.ndim if isinstance(info, TensorStructInfo) else -1

    def refuse(self, why: str) -> Exception:
        return located(f"as_pyfunc: {self.op_name} {why}", self.call)


def located(message: str, node) -> Exception:
    """The error to raise about `node`: at its place in the source when it has one
    (`file:line:col: error: ...`), else a UserError."""
    span = getattr(node, "span", None)
    return error(message, span) if span is not None else UserError(message)


Row = Callable[[OpCall], str]


@record
class Backend:
    name: str
    imports: tuple[str, ...]  # lines at the top of every converted function, before those of `uses`
    tensor: str  # constructor of constant tensors: "np.array" or "torch.tensor"
    ops: Mapping[str, Row]
    # optional imports, added when the converted text uses the name (e.g. "nn." -> the numpy_nn helpers)
    uses: Mapping[str, str] = field(default_factory=dict)
    scalar_result: str = ""  # wraps a 0-d result (numpy reductions return scalars, not arrays)


def python_value(value) -> str:
    """An attribute value (int, float, bool, str, tuple, None) as Python text."""
    if isinstance(value, tuple):
        return f"({value[0]!r},)" if len(value) == 1 else repr(tuple(value))
    if isinstance(value, str):
        return repr(value)
    return repr(value)


def call(function: str, *attrs: str, **defaults) -> Row:
    """`function(arg0, arg1, ..., attr=value...)`: every argument in order, then the named
    attributes as keywords (renamed `relax_name:keyword`)."""

    def row(op: OpCall) -> str:
        parts = list(op.args)
        for spec in attrs:
            relax_name, _, keyword = spec.partition(":")
            parts.append(f"{keyword or relax_name}={python_value(op.attr(relax_name, defaults.get(relax_name)))}")
        return f"{function}({', '.join(parts)})"

    return row


def template(text: str) -> Row:
    """A row written as a format string over `a`, `b`, `c` (the arguments) and attributes."""

    def row(op: OpCall) -> str:
        values = dict(zip("abcdef", op.args))
        values.update({key: python_value(value) for key, value in op.attrs.items()})
        values["dtype"] = repr(op.out_dtype)
        values["dtype_name"] = op.out_dtype
        return text.format(**values)

    return row


def with_out_dtype(row: Row, cast: str) -> Row:
    """`row`, cast to the result dtype when the operator names one (matmul's out_dtype)."""

    def wrapped(op: OpCall) -> str:
        text = row(op)
        if op.attr("out_dtype") not in (None, "", "void"):
            return cast.format(text, op.attr("out_dtype"))
        return text

    return wrapped


def require_attrs(row: Row, **expected) -> Row:
    """`row`, refused (naming the operator) when an attribute differs from what it covers."""

    def checked(op: OpCall) -> str:
        for key, value in expected.items():
            if op.attr(key) not in (None, value):  # None: the operator's default, the same layout
                raise op.refuse(f"with {key}={op.attr(key)!r} has no mapping (only {key}={value!r}); "
                                "run legalize-ops first to convert it as a call_tir")
        return row(op)

    return checked
