"""Image operators: R.image.resize2d(data, size), as TVM's topi computes it. The
computation takes the number of spatial axes as a parameter: image_3d.py registers
resize3d from it (roi then holds 6 numbers in TVM's order, start_w, start_h,
start_d, end_w, end_h, end_d: the 3-D axes listed innermost first, unlike 2-D).

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
"cubic" the 4x4 neighbours (2x2x2 and 4x4x4 in 3-D) with Keys' spline (cubic_alpha; cubic_exclude drops
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
LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
SPATIAL = {2: "HW", 3: "DHW"}
ROI_ORDER = {2: "HW", 3: "WHD"}  # the axes in the order roi lists their starts, then their ends
FLOAT = "float32"  # the precision of coordinates and blending, as in topi


def _one_of(choices):
    return lambda value: None if value in choices else "expected one of " + ", ".join(repr(c) for c in choices)


def _roi_check(rank: int):
    letters = ROI_ORDER[rank].lower()
    names = ", ".join([f"start_{a}" for a in letters] + [f"end_{a}" for a in letters])

    def check(value) -> str | None:
        values = (value,) if isinstance(value, (int, float, tir.FloatImm)) else value
        if value is None or isinstance(values, tuple) and len(values) in (1, 2 * rank):
            return None
        return f"expected {2 * rank} numbers ({names})"

    return check


def _roi_values(value, rank: int) -> tuple[float, ...]:
    values = (value,) if not isinstance(value, tuple) else value
    values = tuple(float(v.value if isinstance(v, (tir.FloatImm, tir.IntImm)) else v) for v in values)
    return values * (2 * rank) if len(values) == 1 else values


def _size_dims(call, rank: int):
    """The target sizes of the spatial axes (D,) H, W from the size argument, or None
    when not known."""
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
        dims = dims * rank
    if len(dims) != rank:
        names = {2: "height, width", 3: "depth, height, width"}[rank]
        raise call.error(f"size must give 1 or {rank} values ({names}), got {len(dims)}")
    return dims


def _resized_dims(call, dims, size, rank: int) -> tuple:
    """`dims` with the spatial axes of the layout replaced by the target sizes."""
    dims = list(dims)
    for letter, value in zip(SPATIAL[rank], size):
        dims[call.attrs["layout"].index(letter)] = value
    return tuple(dims)


def resize_infer(rank: int):
    def infer(call) -> TensorStructInfo:
        data = tensor_info(call, 0)
        if data.ndim >= 0 and data.ndim != rank + 2:
            raise call.error(f"data must have rank {rank + 2}, got rank {data.ndim}")
        out_dtype = call.attrs["out_dtype"] or data.dtype
        size = _size_dims(call, rank)
        if data.shape_values is None or size is None:
            return TensorStructInfo(None, out_dtype, rank + 2)
        for value in size:
            if static_value(value) is not None and static_value(value) < 1:
                raise call.error(f"size must be positive, got {static_value(value)}")
        return make_tensor_info(_resized_dims(call, data.shape_values, size, rank), out_dtype)

    return infer


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


def _axis_weights(attrs, method: str, coordinate, size):
    """For one axis: the first neighbour's index, the neighbour offsets and their weights."""
    floor = _call("floor", coordinate)
    start, fraction = tir.Cast(te.INDEX_DTYPE, floor), tir.Sub(coordinate, floor)
    if method == "linear":
        return start, (0, 1), [tir.Sub(_f(1.0), fraction), fraction]
    weights = _cubic_weights(fraction, attrs["cubic_alpha"])
    if attrs["cubic_exclude"]:
        weights = _exclude_outside(weights, start, size)
    return start, (-1, 0, 1, 2), weights


def resize_compute(call, data: te.Tensor, out_dims, out_dtype: str, rank: int) -> te.Tensor:
    attrs = call.attrs
    layout, method, mode = attrs["layout"], attrs["method"], attrs["coordinate_transformation_mode"]
    axes = [layout.index(letter) for letter in SPATIAL[rank]]
    sizes = [data.shape[axis] for axis in axes]
    roi = _roi_values(attrs["roi"], rank)
    roi_axes = [ROI_ORDER[rank].index(letter) for letter in SPATIAL[rank]]
    rounding = attrs["rounding_method"] or ("round" if mode == "align_corners" else "floor")

    def pixel(index, positions):
        source = list(index)
        for axis, size, position in zip(axes, sizes, positions):
            source[axis] = tir.Max(tir.Min(position, size - int64(1)), int64(0))
        return _as_float(data[tuple(source)])

    def blend(index, taps, chosen=()):
        """The weighted sum over the neighbours of the axes from len(chosen) on (the
        outer axis outermost, as topi nests it)."""
        if len(chosen) == rank:
            return pixel(index, chosen)
        start, offsets, weights = taps[len(chosen)]
        return _weighted_sum([blend(index, taps, (*chosen, start + int64(o))) for o in offsets], weights)

    def body(*index):
        coordinates = [source_coordinate(mode, index[axis], size, out_dims[axis], roi[i], roi[rank + i])
                       for i, axis, size in zip(roi_axes, axes, sizes)]
        if method == "nearest_neighbor":
            value = pixel(index, [nearest_index(c, rounding) for c in coordinates])
        else:
            value = blend(index, [_axis_weights(attrs, method, c, size) for c, size in zip(coordinates, sizes)])
        if mode == "tf_crop_and_resize":
            outside = None
            for coordinate, size in zip(coordinates, sizes):
                part = tir.Or(tir.LT(coordinate, _f(0.0)), tir.GT(coordinate, tir.Sub(_as_float(size), _f(1.0))))
                outside = part if outside is None else tir.Or(outside, part)
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


def resize_legalize(rank: int):
    def legalize(call, context):
        info = resize_infer(rank)(call)
        if info.shape_values is None:
            return None
        if not dt.is_float(tensor_info(call, 0).dtype) and call.attrs["method"] != "nearest_neighbor":
            raise call.error(f"{call.attrs['method']} resizing needs a floating-point tensor")
        size = _size_dims(call, rank)

        def fcompute(data):
            # The output dims from the placeholder's own shape, so that symbolic sizes
            # are the kernel's variables, not the caller's.
            return resize_compute(call, data, _resized_dims(call, data.shape, size, rank), info.dtype, rank)

        return context.call_te(fcompute, call.args[:1], call.arg_info[:1], f"resize{rank}d")

    return legalize


def register_resize(rank: int, rounding_method: str) -> None:
    """Registers resize<rank>d (TVM's Python API defaults rounding_method to "round" in
    2-D and to "" in 3-D)."""
    register(OpDef(
        name=f"relax.image.resize{rank}d",
        args=("data", "size"),
        attrs=(
            AttrSpec("roi", (0.0,) * (2 * rank), _roi_check(rank)),
            AttrSpec("layout", LAYOUTS[rank][0], _one_of(LAYOUTS[rank])),
            AttrSpec("method", "linear", _one_of(METHODS)),
            AttrSpec("coordinate_transformation_mode", "half_pixel", _one_of(COORDINATE_MODES)),
            AttrSpec("rounding_method", rounding_method, _one_of(ROUNDING_METHODS)),
            AttrSpec("cubic_alpha", -0.75),
            AttrSpec("cubic_exclude", 0),
            AttrSpec("extrapolation_value", 0.0),
            AttrSpec("out_dtype", None, out_dtype_check),
        ),
        infer=resize_infer(rank),
        pattern="injective",
        legalize=resize_legalize(rank),
        doc=f"resize the {' and '.join(SPATIAL[rank])} axes of an image by nearest, linear or cubic interpolation",
    ))


register_resize(2, "round")
