"""R.nn.pad and R.nn.dropout.

pad widens every axis by (before, after) amounts given as one flat list
(before0, after0, before1, after1, ...). pad_mode "constant" fills with pad_value;
"reflect", "replicate" and "circular" read the input at a mirrored, clamped or
wrapped index, as numpy's "reflect", "edge" and "wrap" modes do (these are TVM's
names for them; TVM pads anything else, "edge" included, with the constant).

dropout at inference is the identity; like TVM it returns (output, mask) with a mask
of ones.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from . import te
from .nn_window import fold, if_then_else, in_bounds
from .registry import REQUIRED, AttrSpec, OpDef, register
from .shape import int64, make_tensor_info, static_value, tensor_info

PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_width_check(value) -> str | None:
    if not isinstance(value, tuple) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return "expected a list of ints (before0, after0, before1, after1, ...)"
    if any(v < 0 for v in value):
        return "pad widths must not be negative"
    return None


def _pad_mode_check(value) -> str | None:
    if value in PAD_MODES:
        return None
    hint = "; numpy's 'edge' is 'replicate'" if value == "edge" else ""
    return f"expected one of {', '.join(PAD_MODES)}{hint}"


def _pad_value_check(value) -> str | None:
    if isinstance(value, (int, float)) or isinstance(value, (tir.IntImm, tir.FloatImm)):
        return None
    return "expected a number"


def _pad_widths(call, ndim: int) -> list[tuple[int, int]]:
    widths = call.attrs["pad_width"]
    if len(widths) != 2 * ndim:
        raise call.error(f"pad_width needs 2 values per axis ({2 * ndim} for rank {ndim}), got {len(widths)}")
    return [(widths[2 * a], widths[2 * a + 1]) for a in range(ndim)]


def _pad_infer(call) -> TensorStructInfo:
    data = tensor_info(call, 0)
    if data.shape_values is None:
        if data.ndim >= 0:
            _pad_widths(call, data.ndim)
        return TensorStructInfo(None, data.dtype, data.ndim)
    widths = _pad_widths(call, data.ndim)
    mode = call.attrs["pad_mode"]
    for axis, ((before, after), size) in enumerate(zip(widths, data.shape_values)):
        known = static_value(size)
        if mode == "reflect" and known is not None and (before or after) and known < 2:
            raise call.error(f"cannot reflect axis {axis} of size {known}")
        if mode in ("replicate", "circular") and known == 0 and (before or after):
            raise call.error(f"cannot {mode} axis {axis} of size 0")
    dims = tuple(fold(size + int64(before + after)) for (before, after), size in zip(widths, data.shape_values))
    return make_tensor_info(dims, data.dtype)


def _number(value) -> float:
    return value.value if isinstance(value, (tir.IntImm, tir.FloatImm)) else value


def _source_index(mode: str, index, size):
    """Where an index outside [0, size) reads from in each non-constant mode."""
    if mode == "replicate":
        return tir.Min(tir.Max(index, int64(0)), size - int64(1))
    if mode == "circular":
        return index % size
    # reflect: mirror about both ends without repeating them; the pattern repeats
    # every 2 * (size - 1) positions.
    period = (size - int64(1)) * int64(2)
    offset = index % period
    return tir.Min(offset, period - offset)


def pad_compute(data: te.Tensor, widths, mode: str, pad_value) -> te.Tensor:
    dims = tuple(fold(size + int64(before + after)) for (before, after), size in zip(widths, data.shape))

    def body(*index):
        source = [i - int64(before) if before else i for i, (before, _) in zip(index, widths)]
        if mode != "constant":
            source = [_source_index(mode, s, size) if before or after else s
                      for s, size, (before, after) in zip(source, data.shape, widths)]
            return data[tuple(source)]
        padded_axes = [a for a, (before, after) in enumerate(widths) if before or after]
        if not padded_axes:
            return data[tuple(source)]
        inside = in_bounds([source[a] for a in padded_axes], [data.shape[a] for a in padded_axes])
        fill = tir.FloatImm(data.dtype, float(pad_value)) if dt.is_float(data.dtype) \
            else tir.IntImm(data.dtype, int(pad_value))
        return if_then_else(inside, data[tuple(source)], fill)

    return te.compute(dims, body, "PadInput")


def _pad_legalize(call, context):
    data = tensor_info(call, 0)
    if data.shape_values is None:
        return None
    widths = _pad_widths(call, data.ndim)
    mode, value = call.attrs["pad_mode"], _number(call.attrs["pad_value"])
    return context.call_te(lambda d: pad_compute(d, widths, mode, value), call.args, call.arg_info, "pad")


register(OpDef(
    name="relax.nn.pad",
    args=("data",),
    attrs=(
        AttrSpec("pad_width", REQUIRED, _pad_width_check),
        AttrSpec("pad_value", 0.0, _pad_value_check),
        AttrSpec("pad_mode", "constant", _pad_mode_check),
    ),
    infer=_pad_infer,
    pattern="injective",
    legalize=_pad_legalize,
    doc="pad every axis by (before, after): a constant, or reflected, replicated or circular input",
))


# -- dropout ---------------------------------------------------------------------------
def _rate_check(value) -> str | None:
    value = _number(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1:
        return None
    return "expected a number in [0, 1)"


def _dropout_infer(call) -> TupleStructInfo:
    data = tensor_info(call, 0).with_fields(span=None)
    return TupleStructInfo((data, data))


def _dropout_legalize(call, context):
    def fcompute(data):
        output = te.compute(data.shape, lambda *i: data[i], "compute")
        one = tir.FloatImm(data.dtype, 1.0) if dt.is_float(data.dtype) else tir.IntImm(data.dtype, 1)
        mask = te.compute(data.shape, lambda *i: one, "T_full_like", data.dtype)
        return (output, mask)

    return context.call_te(fcompute, call.args, call.arg_info, "dropout")


register(OpDef(
    name="relax.nn.dropout",
    args=("data",),
    attrs=(AttrSpec("rate", 0.5, _rate_check),),
    infer=_dropout_infer,
    pattern="elementwise",
    legalize=_dropout_legalize,
    doc="dropout at inference: (data unchanged, a mask of ones)",
))
