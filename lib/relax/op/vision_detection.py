"""Detection post-processing of R.vision: multibox_transform_loc, all_class_non_max_suppression.

multibox_transform_loc decodes SSD/TFLite box encodings against their anchors and
post-processes the class scores (softmax over classes, threshold mask, background);
both are tensor expressions. all_class_non_max_suppression runs greedy NMS for every
(batch, class) pair in one serial kernel: rank the class's scores (stable, descending),
keep the boxes scoring above score_threshold, and let each kept box in turn drop the
later ones whose IoU reaches iou_threshold. Its "onnx" result is (indices, count); the
kernel writes the selected rows first into a (B*C*N, 3) buffer, and a
dynamic_strided_slice cuts it to (count, 3) at run time, as TVM 0.27 legalizes it: the
call's struct info says (B*C*N, 3), the value the program sees has count rows.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from . import loops, te
from .infer import bind_call
from .normalization import softmax_stages
from .registry import AttrSpec, OpDef, register
from .registry import get as get_op
from .shape import format_dim, int64, make_tensor_info, mul_dims, same_dim, static_value, tensor_info
from .vision import all_of, call_tir, cast, fconst, kernel, one_of
from .vision_nms import _int, _load, _serial, _store, _when

I32, I64 = "int32", "int64"


# -- multibox_transform_loc ----------------------------------------------------------------------
def _variances_check(value) -> str | None:
    if isinstance(value, (tuple, list)) and len(value) == 4 and all(isinstance(v, (int, float)) for v in value):
        return None
    return "expected four floats (x, y, w, h)"


def _multibox_checks(call, cls, loc, anchor) -> None:
    """TVM's static checks: ranks and dtypes always, sizes where they are known."""
    for info, ndim, what in ((cls, 3, "cls_pred must be 3-D [B, num_classes, N]"),
                             (loc, 2, "loc_pred must be 2-D [B, 4*N]"), (anchor, 3, "anchor must be 3-D [1, N, 4]")):
        if info.ndim >= 0 and info.ndim != ndim:
            raise call.error(f"{what}, got ndim {info.ndim}")
    for info, what in ((loc, "loc_pred"), (anchor, "anchor")):
        if "void" not in (cls.dtype, info.dtype) and info.dtype != cls.dtype:
            raise call.error(f"cls_pred and {what} dtype must match, got {cls.dtype} vs {info.dtype}")
    if loc.shape_values is not None and static_value(loc.shape_values[1]) is not None \
            and static_value(loc.shape_values[1]) % 4 != 0:
        raise call.error(f"loc_pred.shape[1] must be divisible by 4, got {format_dim(loc.shape_values[1])}")
    if anchor.shape_values is not None:
        for axis, size, what in ((0, 1, "1"), (2, 4, "4 (ltrb)")):
            if same_dim(anchor.shape_values[axis], int64(size)) is False:
                raise call.error(f"anchor.shape[{axis}] must be {what}, got {format_dim(anchor.shape_values[axis])}")
    if cls.shape_values is None:
        return
    batch, _, anchors = cls.shape_values
    if loc.shape_values is not None:
        if same_dim(loc.shape_values[1], mul_dims(int64(4), anchors)) is False:
            raise call.error(f"loc_pred.shape[1] must equal 4*N with N=cls_pred.shape[2], got "
                             f"{format_dim(loc.shape_values[1])} for N={format_dim(anchors)}")
        if same_dim(loc.shape_values[0], batch) is False:
            raise call.error(f"cls_pred.shape[0] must match loc_pred.shape[0], got {format_dim(batch)} vs "
                             f"{format_dim(loc.shape_values[0])}")
    if anchor.shape_values is not None and same_dim(anchor.shape_values[1], anchors) is False:
        raise call.error(f"anchor.shape[1] must equal N=cls_pred.shape[2], got {format_dim(anchor.shape_values[1])}")


def _multibox_infer(call) -> TupleStructInfo:
    cls, loc, anchor = (tensor_info(call, n) for n in range(3))
    _multibox_checks(call, cls, loc, anchor)
    if cls.shape_values is None:
        return TupleStructInfo((TensorStructInfo(None, cls.dtype, 3), TensorStructInfo(None, cls.dtype, 3)))
    batch, _, anchors = cls.shape_values
    return TupleStructInfo((make_tensor_info((batch, anchors, int64(4)), cls.dtype),
                            make_tensor_info(cls.shape_values, cls.dtype)))


def _decode(attrs, loc, anchor, dtype: str):
    """The (ymin, xmin, ymax, xmax) of box a of batch b: the anchor's centre moved by the
    encoded (x, y) and its size scaled by exp of the encoded (w, h), each times its variance."""
    vx, vy, vw, vh = (fconst(v, dtype) for v in attrs["variances"])
    half, zero, one = fconst(0.5, dtype), fconst(0.0, dtype), fconst(1.0, dtype)

    def corner(b, a, k):
        left, top, right, bottom = (anchor[int64(0), a, int64(n)] for n in range(4))
        ex, ey, ew, eh = (loc[b, a * int64(4) + int64(n)] for n in range(4))
        height, width = bottom - top, right - left
        y_centre, x_centre = ey * vy * height + (top + bottom) * half, ex * vx * width + (left + right) * half
        half_h = half * tir.Call(dtype, "tir.exp", (eh * vh,)) * height
        half_w = half * tir.Call(dtype, "tir.exp", (ew * vw,)) * width
        corners = [y_centre - half_h, x_centre - half_w, y_centre + half_h, x_centre + half_w]
        if attrs["clip"]:
            corners = [tir.Max(zero, tir.Min(one, c)) for c in corners]
        return tir.Select(tir.EQ(k, int64(0)), corners[0], tir.Select(
            tir.EQ(k, int64(1)), corners[1], tir.Select(tir.EQ(k, int64(2)), corners[2], corners[3])))

    return corner


def _multibox_legalize(call, context):
    infos = [tensor_info(call, n) for n in range(3)]
    if any(info.shape_values is None or not dt.is_float(info.dtype) for info in infos):
        return None
    attrs = call.attrs

    def fcompute(cls, loc, anchor):
        dtype = cls.dtype
        batch, _, anchors = cls.shape
        boxes = te.compute((batch, anchors, int64(4)), _decode(attrs, loc, anchor, dtype), "multibox_boxes")
        scores = softmax_stages(cls, 1, False) if attrs["apply_softmax"] else cls
        threshold, zero = fconst(attrs["threshold"], dtype), fconst(0.0, dtype)

        def masked(b, c, n):
            value = scores[b, c, n] * cast(tir.GE(scores[b, c, n], threshold), dtype)
            return value if attrs["keep_background"] else tir.Select(tir.EQ(c, int64(0)), zero, value)

        return boxes, te.compute(cls.shape, masked, "multibox_scores")

    return context.call_te(fcompute, call.args, call.arg_info, "multibox_transform_loc")


register(OpDef(
    "relax.vision.multibox_transform_loc", ("cls_pred", "loc_pred", "anchor"),
    (AttrSpec("clip", False), AttrSpec("threshold", 0.0), AttrSpec("variances", (1.0, 1.0, 1.0, 1.0), _variances_check),
     AttrSpec("keep_background", True), AttrSpec("apply_softmax", True)),
    _multibox_infer, "opaque", _multibox_legalize,
    "(boxes, scores): SSD box encodings decoded against their ltrb anchors, class scores softmaxed and masked",
))


# -- all_class_non_max_suppression -----------------------------------------------------------------
def _nms3d_info(call, position: int, what: str) -> TensorStructInfo:
    info = tensor_info(call, position)
    if info.ndim < 0:
        raise call.error(f"{what} must be 3-D, got a tensor of unknown rank")
    if info.ndim != 3:
        raise call.error(f"{what} must be 3-D, got ndim {info.ndim}")
    return info


def _all_class_nms_infer(call) -> TupleStructInfo:
    boxes = _nms3d_info(call, 0, "boxes [batch_size, num_boxes, 4]")
    scores = _nms3d_info(call, 1, "scores [batch_size, num_classes, num_boxes]")
    onnx = call.attrs["output_format"] == "onnx"
    count = make_tensor_info((int64(1),), I64)
    if boxes.shape_values is None or scores.shape_values is None:
        if onnx:
            return TupleStructInfo((TensorStructInfo(None, I64, 2), count))
        return TupleStructInfo((TensorStructInfo(None, I64, 3), TensorStructInfo(None, "float32", 2),
                                TensorStructInfo(None, I64, 1)))
    batch, anchors, _ = boxes.shape_values
    rows = mul_dims(scores.shape_values[1], anchors)
    if onnx:
        return TupleStructInfo((make_tensor_info((mul_dims(batch, rows), int64(3)), I64), count))
    return TupleStructInfo((make_tensor_info((batch, rows, int64(2)), I64), make_tensor_info((batch, rows), "float32"),
                            make_tensor_info((batch,), I64)))


def _box_iou(corner_a, corner_b, dtype: str):
    """IoU of two boxes given as two opposite corners in either order (a zero union gives 0)."""
    def extent(corner):
        c = [corner(n) for n in range(4)]
        return [tir.Min(c[0], c[2]), tir.Min(c[1], c[3]), tir.Max(c[0], c[2]), tir.Max(c[1], c[3])]

    a, b = extent(corner_a), extent(corner_b)
    zero = fconst(0.0, dtype)
    overlap = [tir.Max(zero, tir.Min(a[k + 2], b[k + 2]) - tir.Max(a[k], b[k])) for k in (0, 1)]
    inter = overlap[1] * overlap[0]
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return tir.Select(tir.LE(union, zero), zero, inter / union)


def _threshold(buffer: tir.Buffer, default: float, dtype: str):
    """A threshold operand's value: a 0-d or one-element tensor; other shapes use TVM's default."""
    if len(buffer.shape) == 0:
        return cast(tir.BufferLoad(buffer, ()), dtype)
    if len(buffer.shape) == 1 and static_value(buffer.shape[0]) == 1:
        return cast(tir.BufferLoad(buffer, (int64(0),)), dtype)
    return fconst(default, dtype)


class _AllClassNms:
    """The statements of the kernel, one (batch, class) pair at a time."""

    def __init__(self, buffers: dict, max_boxes: int, onnx: bool):
        self.b, self.max_boxes, self.onnx = buffers, max_boxes, onnx
        self.dtype = buffers["scores"].dtype
        self.iou_threshold = _threshold(buffers["iou_threshold"], 0.5, buffers["boxes"].dtype)
        self.score_threshold = _threshold(buffers["score_threshold"], 0.0, self.dtype)
        self.anchors = buffers["boxes"].shape[1]

    def get(self, name: str):
        return _load(self.b[name], 0)

    def put(self, name: str, value):
        return _store(self.b[name], value, 0)

    def rank(self, b, c):
        """order/sorted: the class's boxes by descending score (ties keep their order); valid:
        how many score above score_threshold."""
        scores = self.b["scores"]

        def place(j):
            s_j = _load(scores, b, c, j)

            def count(k):
                s_k = _load(scores, b, c, k)
                before = tir.Or(tir.GT(s_k, s_j), all_of(tir.EQ(s_k, s_j), tir.LT(k, j)))
                return _when(before, self.put("rank", self.get("rank") + _int(1)))

            above = _when(tir.GT(s_j, self.score_threshold), self.put("valid", self.get("valid") + _int(1)))
            return loops.sequence(self.put("rank", _int(0)), _serial(self.anchors, count, "k"), above,
                                  _store(self.b["order"], cast(j, I32), self.get("rank")),
                                  _store(self.b["sorted"], s_j, self.get("rank")))

        return loops.sequence(self.put("valid", _int(0)), _serial(self.anchors, place, "j"))

    def emit(self, b, c, j):
        """The selected box j (in ranked order) written at the next output row."""
        row, box, out = self.get("row"), cast(_load(self.b["order"], j), I64), self.b["indices"]
        if self.onnx:
            stores = [_store(out, b, row, 0), _store(out, c, row, 1), _store(out, box, row, 2)]
        else:
            stores = [_store(out, c, b, row, 0), _store(out, box, b, row, 1),
                      _store(self.b["selected_scores"], cast(_load(self.b["sorted"], j), "float32"), b, row)]
        return loops.sequence(*stores, self.put("row", row + _int(1)))

    def suppress(self, b, c):
        boxes, order, ranked, valid = self.b["boxes"], self.b["order"], self.b["sorted"], self.get("valid")

        def corner(j):
            return lambda n: _load(boxes, b, _load(order, j), n)

        def select(j):
            def drop(k):
                overlaps = tir.GE(_box_iou(corner(j), corner(k), boxes.dtype), self.iou_threshold)
                later = all_of(tir.GT(k, j), tir.LT(cast(k, I32), valid),
                               tir.GT(_load(ranked, k), fconst(0.0, self.dtype)))
                return _when(later, _when(overlaps, _store(ranked, fconst(-1.0, self.dtype), k)))

            score = _load(ranked, j)
            chosen = all_of(tir.LT(cast(j, I32), valid), tir.GT(score, fconst(-1.0, self.dtype)),
                            tir.LT(self.get("num"), _int(self.max_boxes)), tir.GT(score, self.score_threshold))
            return _when(chosen, loops.sequence(self.emit(b, c, j), self.put("num", self.get("num") + _int(1)),
                                                _serial(self.anchors, drop, "k")))

        run = all_of(tir.GT(self.iou_threshold, fconst(0.0, self.iou_threshold.dtype)), tir.GT(valid, _int(0)))
        return loops.sequence(self.put("num", _int(0)), _when(run, _serial(self.anchors, select, "j")))

    def body(self):
        batch, classes, _ = self.b["scores"].shape
        out = self.b["indices"]
        clear = loops.loop_nest(out.shape, lambda index: tir.BufferStore(out, int64(0), index), "z")
        if not self.onnx:
            kept = self.b["selected_scores"]
            clear = loops.sequence(clear, loops.loop_nest(
                kept.shape, lambda index: tir.BufferStore(kept, fconst(0.0, "float32"), index), "y"))

        def per_class(b):
            return lambda c: loops.sequence(self.rank(b, c), self.suppress(b, c))

        if self.onnx:
            classes_loop = _serial(batch, lambda b: _serial(classes, per_class(b), "c"), "b")
            return loops.sequence(clear, self.put("row", _int(0)), classes_loop,
                                  _store(self.b["count"], cast(self.get("row"), I64), 0))

        def per_batch(b):
            return loops.sequence(self.put("row", _int(0)), _serial(classes, per_class(b), "c"),
                                  _store(self.b["count"], cast(self.get("row"), I64), b))

        return loops.sequence(clear, _serial(batch, per_batch, "b"))


def _max_boxes(call, anchors) -> int:
    """max_output_boxes_per_class: its value when it is a constant, else num_boxes (as TVM 0.27)."""
    value = call.args[2]
    if isinstance(value, rx.Constant) and value.data.size == 1:
        return int(value.data.reshape(()))
    return static_value(anchors)


def _nms_kernel(call, context, out_info) -> str | None:
    """The kernel's name (added to the module), or None when it cannot be built."""
    boxes_info, scores_info, iou_info, score_info = (tensor_info(call, n) for n in (0, 1, 3, 4))
    infos = (boxes_info, scores_info, iou_info, score_info)
    if any(info.shape_values is None or info.dtype == "void" for info in infos):
        return None
    if any(static_value(d) is None for d in boxes_info.shape_values + scores_info.shape_values):
        return None
    onnx = call.attrs["output_format"] == "onnx"
    names = ("indices", "count") if onnx else ("indices", "selected_scores", "count")
    outputs = {name: loops.buffer(name, info.shape_values, info.dtype) for name, info in zip(names, out_info.fields)}
    inputs = {name: loops.buffer(name, info.shape_values, info.dtype)
              for name, info in zip(("boxes", "scores", "iou_threshold", "score_threshold"), infos)}
    anchors = boxes_info.shape_values[1]
    scratch = {name: loops.buffer(name, (1,), I32) for name in ("rank", "valid", "num", "row")}
    scratch["order"] = loops.buffer("order", (anchors,), I32)
    scratch["sorted"] = loops.buffer("sorted", (anchors,), scores_info.dtype)
    builder = _AllClassNms({**inputs, **outputs, **scratch}, _max_boxes(call, anchors), onnx)
    name = context.unique_name("all_class_non_max_suppression")
    context.new_functions[name] = kernel(list(inputs.values()) + list(outputs.values()), builder.body(),
                                         scratch.values())
    return name


def _slice_bounds(count):
    """begin, end, strides of the slice that keeps the first count[0] rows of (rows, 3)."""
    begin = te.compute((2,), lambda i: int64(0), "begin")
    end = te.compute((2,), lambda i: tir.Select(tir.EQ(i, int64(0)), count[int64(0)], int64(3)), "end")
    strides = te.compute((2,), lambda i: int64(1), "strides")
    return begin, end, strides


def _all_class_nms_legalize(call, context):
    out_info = _all_class_nms_infer(call)
    name = _nms_kernel(call, context, out_info)
    if name is None:
        return None
    args = (call.args[0], call.args[1], call.args[3], call.args[4])
    result = call_tir(name, args, out_info)
    if call.attrs["output_format"] != "onnx":
        return result
    # onnx: the first count rows of the indices, a size known only at run time.
    bindings = []

    def bind(hint, value, info):
        var = context.local_var(hint, info)
        bindings.append(rx.VarBinding(var, value, span=call.call.span))
        return var

    nms = bind("nms", result, out_info)
    indices = bind("nms_indices", rx.TupleGetItem(nms, 0), out_info.fields[0])
    count = bind("nms_count", rx.TupleGetItem(nms, 1), out_info.fields[1])
    bounds_call = context.call_te(_slice_bounds, (count,), (out_info.fields[1],), "nms_slice_bounds")
    bounds = bind("nms_bounds", bounds_call, bounds_call.sinfo_args[0])
    parts = [bind(hint, rx.TupleGetItem(bounds, n), make_tensor_info((int64(2),), I64))
             for n, hint in enumerate(("begin", "end", "strides"))]
    slice_call = rx.Call(rx.Op("relax.dynamic_strided_slice"), (indices, *parts), span=call.call.span)
    slice_op = get_op("relax.dynamic_strided_slice")
    trimmed_value = slice_op.legalize(bind_call(slice_call), context)
    trimmed = bind("nms_trimmed", trimmed_value, TensorStructInfo(None, I64, 2))
    # The row count as a symbolic size, so that later operators legalize over it.
    sized_info = make_tensor_info((context.local_size("num_selected"), int64(3)), I64)
    sized = context.local_var("nms_selected", sized_info)
    bindings.append(rx.MatchCast(sized, trimmed, sized_info, span=call.call.span))
    return rx.SeqExpr((rx.BindingBlock(tuple(bindings)),), rx.Tuple((sized, count)))


register(OpDef(
    "relax.vision.all_class_non_max_suppression",
    ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"),
    (AttrSpec("output_format", "onnx", one_of("onnx", "tensorflow")),),
    _all_class_nms_infer, "opaque", _all_class_nms_legalize,
    "greedy NMS per batch and class: onnx (selected [batch, class, box] rows, count) or tensorflow "
    "(indices, scores, counts per batch)",
))
