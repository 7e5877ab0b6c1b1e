"""Image operators: R.image.resize2d(data, size), as TVM's topi computes it.

Each output pixel maps back to an input coordinate (in float32) by the
coordinate_transformation_mode:

    half_pixel            (x + 0.5) * in / out - 0.5
    align_corners         x * (in - 1) / (out - 1)
    asymmetric            x * in / out
    pytorch_half_pixel    like half_pixel, 0 when out is 1
    tf_half_pixel_for_nn  (x + 0.5) * in / out
    tf_crop_and_resize    inside roi (start_h, start_w, end_h, end_w), in units of the
                          image; outside the image reads extrapolation_value

"nearest_neighbor" picks a pixel by rounding_method ("round" rounds half to even;
"" is "round" for align_corners, else "floor"); "linear" blends the 2x2 neighbours;
"cubic" the 4x4 neighbours with Keys' spline (cubic_alpha; cubic_exclude drops
neighbours outside the image). Neighbour indices are clamped to the image.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import ShapeStructInfo, TensorStructInfo
from .infer import literal_of
from . import te
from .nn_window import out_dtype_check
from .registry import AttrSpec, OpDef, register
from .shape import int64, make_tensor_info, static_value, tensor_info

METHODS = ("nearest_neighbor", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                    "tf_crop_and_resize")
ROUNDING_METHODS = ("round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "")
LAYOUTS = ("NCHW", "NHWC")
FLOAT = "float32"  # the precision of coordinates and blending, as in topi


def _one_of(choices):
    return lambda value: None if value in choices else "expected one of " + ", ".join(repr(c) for c in choices)


def _roi_check(value) -> str | None:
    values = (value,) if isinstance(value, (int, float, tir.FloatImm)) else value
    if value is None or isinstance(values, tuple) and len(values) in (1, 4):
        return None
    return "expected 4 numbers (start_h, start_w, end_h, end_w)"


def _roi_values(value) -> tuple[float, ...]:
    values = (value,) if not isinstance(value, tuple) else value
    values = tuple(float(v.value if isinstance(v, (tir.FloatImm, tir.IntImm)) else v) for v in values)
    return values * 4 if len(values) == 1 else values


def _size_dims(call):
    """The target (height, width) from the size argument, or None when not known."""
    arg, info = call.args[1], call.arg_info[1]
    if isinstance(arg, rx.ShapeExpr):
        dims = tuple(arg.values)
    elif isinstance(arg, (rx.Tuple, rx.PrimValue)):
        value = literal_of(arg)
        dims = tuple(int64(v) if isinstance(v, int) else v for v in (value if isinstance(value, tuple) else (value,)))
    elif isinstance(info, ShapeStructInfo) and info.values is not None:
        dims = tuple(info.values)
    else:
        return None
    if len(dims) == 1:
        dims = dims * 2
    if len(dims) != 2:
        raise call.error(f"size must give 1 or 2 values (height, width), got {len(dims)}")
    return dims


def _resize_infer(call) -> TensorStructInfo:
    data = tensor_info(call, 0)
    if data.ndim >= 0 and data.ndim != 4:
        raise call.error(f"data must have rank 4, got rank {data.ndim}")
    out_dtype = call.attrs["out_dtype"] or data.dtype
    size = _size_dims(call)
    if data.shape_values is None or size is None:
        return TensorStructInfo(None, out_dtype, 4)
    for value in size:
        if static_value(value) is not None and static_value(value) < 1:
            raise call.error(f"size must be positive, got {static_value(value)}")
    layout = call.attrs["layout"]
    dims = list(data.shape_values)
    dims[layout.index("H")], dims[layout.index("W")] = size
    return make_tensor_info(tuple(dims), out_dtype)


def _f(value) -> tir.PrimExpr:
    return tir.FloatImm(FLOAT, float(value))


def _as_float(value: tir.PrimExpr) -> tir.PrimExpr:
    return value if value.dtype == FLOAT else tir.Cast(FLOAT, value)


def source_coordinate(mode: str, x, in_size, out_size, start, end) -> tir.PrimExpr:
    """The input coordinate that output index x reads, in float32."""
    x, size, target = _as_float(x), _as_float(in_size), _as_float(out_size)
    scale = tir.Div(size, target)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        value = tir.Sub(tir.Mul(tir.Add(x, _f(0.5)), scale), _f(0.5))
        if mode == "pytorch_half_pixel":
            value = tir.Select(tir.GT(out_size, int64(1)), value, _f(0.0))
        return value
    if mode == "align_corners":
        return tir.Mul(tir.Div(tir.Sub(size, _f(1.0)), tir.Sub(target, _f(1.0))), x)
    if mode == "asymmetric":
        return tir.Mul(scale, x)
    if mode == "tf_half_pixel_for_nn":
        return tir.Mul(tir.Add(x, _f(0.5)), scale)
    # tf_crop_and_resize: the roi's start and end are fractions of the image.
    last = tir.Sub(size, _f(1.0))
    spread = tir.Add(tir.Mul(_f(start), last),
                     tir.Div(tir.Mul(tir.Mul(x, _f(end - start)), last), tir.Sub(target, _f(1.0))))
    middle = tir.Mul(_f(0.5 * (start + end)), last)
    return tir.Select(tir.GT(out_size, int64(1)), spread, middle)


def _call(name: str, value: tir.PrimExpr) -> tir.PrimExpr:
    return tir.Call(value.dtype, f"tir.{name}", (value,))


def nearest_index(coordinate, rounding: str) -> tir.PrimExpr:
    if rounding == "round":
        value = _call("nearbyint", coordinate)
    elif rounding == "round_prefer_floor":
        value = _call("ceil", tir.Sub(coordinate, _f(0.5)))
    elif rounding == "round_prefer_ceil":
        value = _call("floor", tir.Add(coordinate, _f(0.5)))
    elif rounding == "floor":
        # topi adds an epsilon against rounding errors; so do we, to agree with it.
        value = _call("floor", tir.Add(coordinate, _f(1e-5)))
    else:
        value = _call("ceil", tir.Sub(coordinate, _f(1e-5)))
    return tir.Cast(te.INDEX_DTYPE, value)


def _cubic_weights(t, alpha: float):
    t2 = tir.Mul(t, t)
    t3 = tir.Mul(t2, t)
    a = _f(alpha)
    return [
        tir.Mul(a, tir.Add(tir.Sub(t3, tir.Mul(_f(2.0), t2)), t)),
        tir.Add(tir.Sub(tir.Mul(_f(alpha + 2), t3), tir.Mul(_f(3 + alpha), t2)), _f(1.0)),
        tir.Sub(tir.Add(tir.Mul(_f(-(alpha + 2)), t3), tir.Mul(_f(3 + 2 * alpha), t2)), tir.Mul(a, t)),
        tir.Add(tir.Mul(_f(-alpha), t3), tir.Mul(a, t2)),
    ]


def _weighted_sum(values, weights) -> tir.PrimExpr:
    total = None
    for value, weight in zip(values, weights):
        term = tir.Mul(value, weight)
        total = term if total is None else tir.Add(total, term)
    return total


def resize_compute(call, data: te.Tensor, out_dims, out_dtype: str) -> te.Tensor:
    attrs = call.attrs
    layout, method, mode = attrs["layout"], attrs["method"], attrs["coordinate_transformation_mode"]
    h_axis, w_axis = layout.index("H"), layout.index("W")
    height, width = data.shape[h_axis], data.shape[w_axis]
    roi = _roi_values(attrs["roi"])
    rounding = attrs["rounding_method"] or ("round" if mode == "align_corners" else "floor")

    def pixel(index, y, x):
        y = tir.Max(tir.Min(y, height - int64(1)), int64(0))
        x = tir.Max(tir.Min(x, width - int64(1)), int64(0))
        source = list(index)
        source[h_axis], source[w_axis] = y, x
        return _as_float(data[tuple(source)])

    def body(*index):
        y, x = index[h_axis], index[w_axis]
        in_y = source_coordinate(mode, y, height, out_dims[h_axis], roi[0], roi[2])
        in_x = source_coordinate(mode, x, width, out_dims[w_axis], roi[1], roi[3])
        if method == "nearest_neighbor":
            value = pixel(index, nearest_index(in_y, rounding), nearest_index(in_x, rounding))
        else:
            y_floor, x_floor = _call("floor", in_y), _call("floor", in_x)
            y_int, x_int = tir.Cast(te.INDEX_DTYPE, y_floor), tir.Cast(te.INDEX_DTYPE, x_floor)
            y_frac, x_frac = tir.Sub(in_y, y_floor), tir.Sub(in_x, x_floor)
            if method == "linear":
                x_weights = [tir.Sub(_f(1.0), x_frac), x_frac]
                y_weights = [tir.Sub(_f(1.0), y_frac), y_frac]
                taps = (0, 1)
            else:
                x_weights = _cubic_weights(x_frac, attrs["cubic_alpha"])
                y_weights = _cubic_weights(y_frac, attrs["cubic_alpha"])
                taps = (-1, 0, 1, 2)
                if attrs["cubic_exclude"]:
                    x_weights = _exclude_outside(x_weights, x_int, width)
                    y_weights = _exclude_outside(y_weights, y_int, height)
            rows = [_weighted_sum([pixel(index, y_int + int64(j), x_int + int64(i)) for i in taps], x_weights)
                    for j in taps]
            value = _weighted_sum(rows, y_weights)
        if mode == "tf_crop_and_resize":
            outside = tir.Or(
                tir.Or(tir.LT(in_y, _f(0.0)), tir.GT(in_y, tir.Sub(_as_float(height), _f(1.0)))),
                tir.Or(tir.LT(in_x, _f(0.0)), tir.GT(in_x, tir.Sub(_as_float(width), _f(1.0)))))
            value = tir.Select(outside, _f(attrs["extrapolation_value"]), value)
        return value if out_dtype == FLOAT else tir.Cast(out_dtype, value)

    return te.compute(out_dims, body, "resize", out_dtype)


def _exclude_outside(weights, start, size):
    """Neighbours outside the image get weight 0; the rest are renormalized."""
    kept = []
    for offset, weight in zip((-1, 0, 1, 2), weights):
        position = start + int64(offset)
        outside = tir.Or(tir.LT(position, int64(0)), tir.GE(position, size))
        kept.append(tir.Select(outside, _f(0.0), weight))
    total = kept[0]
    for weight in kept[1:]:
        total = tir.Add(total, weight)
    return [tir.Div(weight, total) for weight in kept]


def _resize_legalize(call, context):
    info = _resize_infer(call)
    if info.shape_values is None:
        return None
    out_dtype = info.dtype
    if not dt.is_float(tensor_info(call, 0).dtype) and call.attrs["method"] != "nearest_neighbor":
        raise call.error(f"{call.attrs['method']} resizing needs a floating-point tensor")
    layout, size = call.attrs["layout"], _size_dims(call)

    def fcompute(data):
        # The output dims from the placeholder's own shape, so that symbolic sizes
        # are the kernel's variables, not the caller's.
        dims = list(data.shape)
        dims[layout.index("H")], dims[layout.index("W")] = size
        return resize_compute(call, data, tuple(dims), out_dtype)

    return context.call_te(fcompute, call.args[:1], call.arg_info[:1], "resize2d")


register(OpDef(
    name="relax.image.resize2d",
    args=("data", "size"),
    attrs=(
        AttrSpec("roi", (0.0, 0.0, 0.0, 0.0), _roi_check),
        AttrSpec("layout", "NCHW", _one_of(LAYOUTS)),
        AttrSpec("method", "linear", _one_of(METHODS)),
        AttrSpec("coordinate_transformation_mode", "half_pixel", _one_of(COORDINATE_MODES)),
        AttrSpec("rounding_method", "round", _one_of(ROUNDING_METHODS)),
        AttrSpec("cubic_alpha", -0.75),
        AttrSpec("cubic_exclude", 0),
        AttrSpec("extrapolation_value", 0.0),
        AttrSpec("out_dtype", None, out_dtype_check),
    ),
    infer=_resize_infer,
    pattern="injective",
    legalize=_resize_legalize,
    doc="resize the H and W axes of an image by nearest, linear or cubic interpolation",
))
