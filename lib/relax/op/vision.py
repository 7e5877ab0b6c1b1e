"""Region and box operators of R.vision: roi_align, roi_pool, get_valid_counts.

roi_align samples each output bin on a grid whose size may depend on the region
(sample_ratio <= 0: ceil(region size / pooled size)), so it is a loop-nest kernel
(see loops.py) that accumulates into the output. roi_pool is a tensor expression:
a max over the whole feature map masked to the bin, as TVM's topi computes it.
get_valid_counts compacts the boxes whose score passes a threshold to the top, a
serial scan. The non-maximum suppressions live in vision_nms.py.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from . import loops, te
from .index_check import checked_position
from .registry import AttrSpec, OpDef, register
from .shape import format_dim, int64, make_tensor_info, static_value, tensor_info


def one_of(*choices):
    def check(value) -> str | None:
        return None if value in choices else f"expected one of {', '.join(map(str, choices))}"

    return check


def pooled_size_check(value) -> str | None:
    sizes = (value,) if isinstance(value, int) else value
    if isinstance(sizes, tuple) and len(sizes) in (1, 2) and all(isinstance(s, int) and s > 0 for s in sizes):
        return None
    return "expected one or two positive ints"


def pooled_hw(value) -> tuple[int, int]:
    sizes = (value,) if isinstance(value, int) else tuple(value)
    return (sizes[0], sizes[-1])


def call_tir(name: str, args, out_info) -> rx.Call:
    return rx.Call(rx.Op("relax.call_tir"), (rx.GlobalVar(name), rx.Tuple(tuple(args))), sinfo_args=(out_info,))


def kernel(buffers, body, scratch=()) -> tir.PrimFunc:
    """A loop-nest PrimFunc whose root block also allocates `scratch` buffers (the
    running values a serial kernel keeps between iterations)."""
    func = loops.prim_func(buffers, body)
    root = func.body.block.with_fields(alloc_buffers=tuple(scratch))
    return func.with_fields(body=func.body.with_fields(block=root))


def fconst(value: float, dtype: str) -> tir.FloatImm:
    return tir.FloatImm(dtype, float(value))


def intrinsic(dtype: str, name: str, *args) -> tir.Call:
    return tir.Call(dtype, f"tir.{name}", tuple(args))


def cast(value, dtype: str):
    return value if value.dtype == dtype else tir.Cast(dtype, value)


def any_of(*conditions):
    result = conditions[0]
    for condition in conditions[1:]:
        result = tir.Or(result, condition)
    return result


def all_of(*conditions):
    result = conditions[0]
    for condition in conditions[1:]:
        result = tir.And(result, condition)
    return result


# -- shared inference for the region operators ----------------------------------------------
def _roi_infer(call) -> TensorStructInfo:
    data, rois = tensor_info(call, 0), tensor_info(call, 1)
    name = "ROIAlign" if call.op.name.endswith("align") else "ROIPool"
    if data.ndim >= 0 and data.ndim != 4:
        raise call.error(f"{name} expects the input data to be 4-D, got ndim {data.ndim}")
    if rois.ndim >= 0 and rois.ndim != 2:
        raise call.error(f"{name} expects rois to be 2-D, got ndim {rois.ndim}")
    if rois.shape_values is not None and static_value(rois.shape_values[1]) not in (None, 5):
        raise call.error(f"{name} expects rois to have shape (num_roi, 5), got last dimension "
                         f"{format_dim(rois.shape_values[1])}")
    if data.shape_values is None or rois.shape_values is None:
        return TensorStructInfo(None, data.dtype, 4)
    height, width = (int64(s) for s in pooled_hw(call.attrs["pooled_size"]))
    num_roi = rois.shape_values[0]
    if call.attrs["layout"] == "NHWC":
        return make_tensor_info((num_roi, height, width, data.shape_values[3]), data.dtype)
    return make_tensor_info((num_roi, data.shape_values[1], height, width), data.dtype)


def _float_operands(call) -> tuple[TensorStructInfo, TensorStructInfo] | None:
    """The data and rois infos when a kernel can be made (static ranks, float dtypes)."""
    data, rois = tensor_info(call, 0), tensor_info(call, 1)
    if data.shape_values is None or rois.shape_values is None:
        return None
    if not (dt.is_float(data.dtype) and dt.is_float(rois.dtype)):
        return None
    return data, rois


# -- roi_align --------------------------------------------------------------------------------
class _Region:
    """The per-region quantities of roi_align, as TIR expressions over rois[i]."""

    def __init__(self, rois: tir.Buffer, i, attrs, dtype: str):
        scale = fconst(attrs["spatial_scale"], dtype)
        load = [tir.BufferLoad(rois, (i, int64(k))) for k in range(5)]
        self.batch = cast(cast(load[0], "int32"), "int64")
        self.start_w, self.start_h = load[1] * scale, load[2] * scale
        height, width = load[4] * scale - self.start_h, load[3] * scale - self.start_w
        if not attrs["aligned"]:  # the legacy clamp: a region is at least one pixel
            height, width = tir.Max(height, fconst(1.0, dtype)), tir.Max(width, fconst(1.0, dtype))
        pooled_h, pooled_w = pooled_hw(attrs["pooled_size"])
        self.bin_h, self.bin_w = height / fconst(pooled_h, dtype), width / fconst(pooled_w, dtype)
        ratio = attrs["sample_ratio"]
        if ratio > 0:
            self.grid_h = self.grid_w = tir.IntImm("int32", ratio)
        else:
            self.grid_h = cast(intrinsic(dtype, "ceil", height / fconst(pooled_h, dtype)), "int32")
            self.grid_w = cast(intrinsic(dtype, "ceil", width / fconst(pooled_w, dtype)), "int32")


def _bilinear(data: tir.Buffer, layout: str, n, c, y, x, dtype: str):
    """data at the fractional (y, x), zero more than a pixel outside the map."""
    height, width = data.shape[1:3] if layout == "NHWC" else data.shape[2:4]
    outside = any_of(tir.LT(y, fconst(-1.0, dtype)), tir.LT(x, fconst(-1.0, dtype)),
                     tir.GT(y, cast(height, dtype)), tir.GT(x, cast(width, dtype)))
    y = tir.Min(tir.Max(y, fconst(0.0, dtype)), cast(height - int64(1), dtype))
    x = tir.Min(tir.Max(x, fconst(0.0, dtype)), cast(width - int64(1), dtype))
    y_low, x_low = cast(intrinsic(dtype, "floor", y), "int32"), cast(intrinsic(dtype, "floor", x), "int32")
    y_high, x_high = cast(intrinsic(dtype, "ceil", y), "int32"), cast(intrinsic(dtype, "ceil", x), "int32")
    y_lerp, x_lerp = y - cast(y_low, dtype), x - cast(x_low, dtype)

    def at(row, col):
        row, col = cast(row, "int64"), cast(col, "int64")
        index = (n, row, col, c) if layout == "NHWC" else (n, c, row, col)
        return cast(tir.BufferLoad(data, index), dtype)

    one = fconst(1.0, dtype)
    value = (at(y_low, x_low) * (one - y_lerp) * (one - x_lerp) + at(y_low, x_high) * (one - y_lerp) * x_lerp
             + at(y_high, x_low) * y_lerp * (one - x_lerp) + at(y_high, x_high) * y_lerp * x_lerp)
    return tir.Call(dtype, "tir.if_then_else", (outside, fconst(0.0, dtype), value))


def _roi_align_legalize(call, context):
    operands = _float_operands(call)
    if operands is None:
        return None
    data_info, rois_info = operands
    attrs, layout, dtype = call.attrs, call.attrs["layout"], rois_info.dtype
    out_info = _roi_infer(call)
    data = loops.buffer("data", data_info.shape_values, data_info.dtype)
    rois = loops.buffer("rois", rois_info.shape_values, dtype)
    out = loops.buffer("compute", out_info.shape_values, data_info.dtype)
    average = attrs["mode"] == "avg"
    lowest = fconst(float(np.finfo(dt.to_numpy(data_info.dtype)).min), data_info.dtype)

    def body(index):
        i, ph, pw, c = index if layout == "NHWC" else (index[0], index[2], index[3], index[1])
        region = _Region(rois, i, attrs, dtype)
        grid_h, grid_w = tir.Var("grid_h", "int32"), tir.Var("grid_w", "int32")
        start_h = region.start_h + cast(ph, dtype) * region.bin_h
        start_w = region.start_w + cast(pw, dtype) * region.bin_w
        rh, rw = tir.Var("rh", "int32"), tir.Var("rw", "int32")
        half = fconst(0.5, dtype)
        y = start_h + (cast(rh, dtype) + half) * region.bin_h / cast(grid_h, dtype)
        x = start_w + (cast(rw, dtype) + half) * region.bin_w / cast(grid_w, dtype)
        batch = checked_position(region.batch, data.shape[0], "R.vision.roi_align")  # a batch index from rois data
        sample = cast(_bilinear(data, layout, batch, c, y, x, dtype), data_info.dtype)
        current = tir.BufferLoad(out, index)
        if average:
            value = current + sample / cast(grid_h * grid_w, data_info.dtype)
        else:
            value = tir.Max(current, sample)
        zero = tir.IntImm("int32", 0)
        accumulate = tir.For(rh, zero, grid_h, "serial", tir.For(rw, zero, grid_w, "serial",
                                                                 tir.BufferStore(out, value, index)))
        init = tir.BufferStore(out, fconst(0.0, data_info.dtype) if average else lowest, index)
        stmt = loops.sequence(init, accumulate)
        return tir.LetStmt(grid_h, region.grid_h, tir.LetStmt(grid_w, region.grid_w, stmt))

    name = context.unique_name("roi_align")
    context.new_functions[name] = loops.prim_func([data, rois, out], loops.loop_nest(out_info.shape_values, body))
    return call_tir(name, call.args, out_info)


register(OpDef(
    "relax.vision.roi_align", ("data", "rois"),
    (AttrSpec("pooled_size", check=pooled_size_check),
     AttrSpec("spatial_scale"), AttrSpec("sample_ratio", -1), AttrSpec("aligned", False),
     AttrSpec("layout", "NCHW", one_of("NCHW", "NHWC")), AttrSpec("mode", "avg", one_of("avg", "max"))),
    _roi_infer, "out_elementwise_fusable", _roi_align_legalize,
    "each region of interest pooled to pooled_size bins, each the average (or max) of bilinear samples",
))


# -- roi_pool ---------------------------------------------------------------------------------------
def _roi_pool_legalize(call, context):
    if _float_operands(call) is None:
        return None
    pooled_h, pooled_w = pooled_hw(call.attrs["pooled_size"])
    scale = call.attrs["spatial_scale"]

    def fcompute(data, rois):
        _, channels, height, width = data.shape
        dtype = rois.dtype
        neg_inf = fconst(float("-inf"), data.dtype)

        def rounded(value):  # ties away from zero, as ONNX MaxRoiPool maps coordinates
            return cast(call_floor(value + fconst(0.5, dtype)), "int32")

        def call_floor(value):
            return intrinsic(dtype, "floor", value)

        def bounds(i, ph, pw):
            start_w, start_h, end_w, end_h = (rounded(rois[i, int64(k)] * fconst(scale, dtype)) for k in (1, 2, 3, 4))
            one = tir.IntImm("int32", 1)
            bin_h = cast(tir.Max(end_h - start_h + one, one), dtype) / fconst(pooled_h, dtype)
            bin_w = cast(tir.Max(end_w - start_w + one, one), dtype) / fconst(pooled_w, dtype)

            def clamp(offset, start, extent):
                return tir.Min(tir.Max(offset + start, tir.IntImm("int32", 0)), cast(extent, "int32"))

            h0 = clamp(cast(call_floor(cast(ph, dtype) * bin_h), "int32"), start_h, height)
            w0 = clamp(cast(call_floor(cast(pw, dtype) * bin_w), "int32"), start_w, width)
            h1 = clamp(cast(intrinsic(dtype, "ceil", cast(ph + int64(1), dtype) * bin_h), "int32"), start_h, height)
            w1 = clamp(cast(intrinsic(dtype, "ceil", cast(pw + int64(1), dtype) * bin_w), "int32"), start_w, width)
            return h0, h1, w0, w1

        rh, rw = te.reduce_axis(height, "rh"), te.reduce_axis(width, "rw")

        def sample(i, c, ph, pw):
            h0, h1, w0, w1 = bounds(i, ph, pw)
            y, x = cast(rh.var, "int32"), cast(rw.var, "int32")
            inside = all_of(tir.LE(h0, y), tir.LT(y, h1), tir.LE(w0, x), tir.LT(x, w1))
            batch = checked_position(cast(rois[i, int64(0)], "int32"), data.shape[0], "R.vision.roi_pool")
            value = tir.Call(data.dtype, "tir.if_then_else", (inside, data[batch, c, rh.var, rw.var], neg_inf))
            return te.reduce_max(value, [rh, rw])

        pooled = te.compute((rois.shape[0], channels, pooled_h, pooled_w), sample, "pooled")

        def result(i, c, ph, pw):
            h0, h1, w0, w1 = bounds(i, ph, pw)
            empty = tir.Or(tir.LE(h1, h0), tir.LE(w1, w0))
            return tir.Call(data.dtype, "tir.if_then_else", (empty, fconst(0.0, data.dtype), pooled[i, c, ph, pw]))

        return te.compute(pooled.shape, result, "compute")

    return context.call_te(fcompute, call.args, call.arg_info, "roi_pool")


register(OpDef(
    "relax.vision.roi_pool", ("data", "rois"),
    (AttrSpec("pooled_size", check=pooled_size_check), AttrSpec("spatial_scale"),
     AttrSpec("layout", "NCHW", one_of("NCHW"))),
    _roi_infer, "out_elementwise_fusable", _roi_pool_legalize,
    "each region of interest max-pooled to pooled_size bins (an empty bin is 0)",
))


# -- get_valid_counts -----------------------------------------------------------------------------
def boxes_info(call, position: int, what: str) -> TensorStructInfo:
    info = tensor_info(call, position)
    if info.ndim >= 0 and info.ndim != 3:
        raise call.error(f"{what} must be 3-D [batch_size, num_anchors, elem_length], got ndim {info.ndim}")
    return info


def check_index(call, info: TensorStructInfo, attr: str, allow_negative: bool = False) -> None:
    """An element index attribute must point inside elem_length (when it is known)."""
    value = call.attrs[attr]
    length = static_value(info.shape_values[2]) if info.shape_values is not None else None
    if allow_negative and value < 0:
        return
    if value < 0 or length is not None and value >= length:
        raise call.error(f"{attr} must be in [0, {'elem_length' if length is None else length}), got {value}")


def _valid_counts_infer(call) -> TupleStructInfo:
    data = boxes_info(call, 0, "data")
    check_index(call, data, "score_index")
    check_index(call, data, "id_index", allow_negative=True)
    if data.shape_values is None:
        fields = (TensorStructInfo(None, "int32", 1), TensorStructInfo(None, data.dtype, 3),
                  TensorStructInfo(None, "int32", 2))
    else:
        batch, anchors, _ = data.shape_values
        fields = (make_tensor_info((batch,), "int32"), make_tensor_info(data.shape_values, data.dtype),
                  make_tensor_info((batch, anchors), "int32"))
    return TupleStructInfo(fields)


def _valid_counts_legalize(call, context):
    info = tensor_info(call, 0)
    if info.shape_values is None:
        return None
    out_info = _valid_counts_infer(call)
    batch, anchors, length = info.shape_values
    dtype, attrs = info.dtype, call.attrs
    data = loops.buffer("data", info.shape_values, dtype)
    count = loops.buffer("valid_count", (batch,), "int32")
    out = loops.buffer("out_tensor", info.shape_values, dtype)
    out_indices = loops.buffer("out_indices", (batch, anchors), "int32")
    i, j, k, j2, k2 = (tir.Var(name, "int64") for name in ("i", "j", "k", "j2", "k2"))
    threshold = cast(fconst(attrs["score_threshold"], "float32"), dtype)
    valid = tir.GT(tir.BufferLoad(data, (i, j, int64(attrs["score_index"]))), threshold)
    if attrs["id_index"] >= 0:
        valid = tir.And(valid, tir.GE(tir.BufferLoad(data, (i, j, int64(attrs["id_index"]))), cast(fconst(0, "float32"), dtype)))
    current = cast(tir.BufferLoad(count, (i,)), "int64")
    keep = loops.sequence(
        tir.For(k, int64(0), length, "serial", tir.BufferStore(out, tir.BufferLoad(data, (i, j, k)), (i, current, k))),
        tir.BufferStore(out_indices, cast(j, "int32"), (i, current)),
        tir.BufferStore(count, tir.BufferLoad(count, (i,)) + tir.IntImm("int32", 1), (i,)),
    )
    fill = loops.sequence(
        tir.For(k2, int64(0), length, "serial", tir.BufferStore(out, cast(fconst(-1.0, "float32"), dtype), (i, j2, k2))),
        tir.BufferStore(out_indices, tir.IntImm("int32", -1), (i, j2)),
    )
    body = loops.sequence(
        tir.BufferStore(count, tir.IntImm("int32", 0), (i,)),
        tir.For(j, int64(0), anchors, "serial", tir.IfThenElse(valid, keep)),
        tir.For(j2, int64(0), anchors, "serial", tir.IfThenElse(tir.GE(j2, current), fill)),
    )
    name = context.unique_name("get_valid_counts")
    context.new_functions[name] = loops.prim_func([data, count, out, out_indices],
                                                  tir.For(i, int64(0), batch, "serial", body))
    return call_tir(name, call.args, out_info)


register(OpDef(
    "relax.vision.get_valid_counts", ("data",),
    (AttrSpec("score_threshold", 0.0), AttrSpec("id_index", 0), AttrSpec("score_index", 1)),
    _valid_counts_infer, "opaque", _valid_counts_legalize,
    "(valid_count, out_tensor, out_indices): the boxes scoring above score_threshold moved to the top",
))
