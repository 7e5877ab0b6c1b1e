"""Non-maximum suppression of R.vision: non_max_suppression.

One serial kernel per call, batch by batch, as TVM's topi does it: rank the first
valid_count boxes by descending score (ties keep their order), keep the top_k, copy
them in that order, then greedily drop every later box of the same class (or any
class with force_suppress) whose IoU with a kept box reaches iou_threshold. Soft-NMS
(soft_nms_sigma > 0) instead picks the best remaining box each round and decays the
scores of the boxes it overlaps by exp(-0.5 / sigma * iou^2). The running counters
live in one-element scratch buffers.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from . import loops
from .registry import AttrSpec, OpDef, register
from .shape import format_shape, int64, make_tensor_info, same_dim, static_value, tensor_info
from .vision import all_of, boxes_info, call_tir, cast, check_index, fconst, kernel

I32 = "int32"


def _int(value: int) -> tir.IntImm:
    return tir.IntImm(I32, value)


def _load(buffer, *index):
    return tir.BufferLoad(buffer, tuple(int64(i) if isinstance(i, int) else cast(i, "int64") for i in index))


def _store(buffer, value, *index):
    return tir.BufferStore(buffer, value, tuple(int64(i) if isinstance(i, int) else cast(i, "int64") for i in index))


def _when(condition, then_case, else_case=None):
    return tir.IfThenElse(condition, then_case, else_case)


def _serial(extent, body, name: str) -> tir.For:
    var = tir.Var(name, "int64")
    return tir.For(var, int64(0), extent, "serial", body(var))


# -- inference ---------------------------------------------------------------------------------
def _check_int32(call, position: int, what: str) -> TensorStructInfo:
    info = tensor_info(call, position)
    if info.dtype not in ("int32", "void"):
        raise call.error(f"{what} must have dtype int32, got {info.dtype}")
    return info


def _nms_infer(call):
    data = boxes_info(call, 0, "data")
    valid_count, indices = _check_int32(call, 1, "valid_count"), _check_int32(call, 2, "indices")
    if valid_count.ndim >= 0 and valid_count.ndim != 1:
        raise call.error(f"valid_count must be 1-D [batch_size], got ndim {valid_count.ndim}")
    if indices.ndim >= 0 and indices.ndim != 2:
        raise call.error(f"indices must be 2-D [batch_size, num_anchors], got ndim {indices.ndim}")
    if data.shape_values is not None:
        length = static_value(data.shape_values[2])
        start = call.attrs["coord_start"]
        if start < 0 or length is not None and start + 4 > length:
            raise call.error(f"coord_start must leave four box coordinates within elem_length, got {start}")
        check_index(call, data, "score_index")
        check_index(call, data, "id_index", allow_negative=True)
        if valid_count.shape_values is not None and same_dim(valid_count.shape_values[0], data.shape_values[0]) is False:
            raise call.error(f"valid_count {format_shape(valid_count.shape_values)} must be [batch_size] for data "
                             f"{format_shape(data.shape_values)}")
    if data.shape_values is None:
        boxes, box_indices, count = (TensorStructInfo(None, data.dtype, 3), TensorStructInfo(None, I32, 2),
                                     TensorStructInfo(None, I32, 2))
    else:
        batch, anchors, _ = data.shape_values
        boxes = make_tensor_info(data.shape_values, data.dtype)
        box_indices, count = make_tensor_info((batch, anchors), I32), make_tensor_info((batch, int64(1)), I32)
    if not call.attrs["return_indices"]:
        return boxes
    if call.attrs["soft_nms_sigma"] > 0.0:
        return TupleStructInfo((boxes, box_indices, count))
    return TupleStructInfo((box_indices, count))


# -- the kernel ---------------------------------------------------------------------------------------
class _NmsKernel:
    """Builds the statements of one batch element `i` over the buffers of the kernel."""

    def __init__(self, attrs, shape, dtype: str, buffers: dict):
        self.attrs, self.dtype = attrs, dtype
        self.batch, self.anchors, self.length = shape
        self.b = buffers
        soft = attrs["soft_nms_sigma"] > 0.0
        self.thresh = cast(fconst(attrs["score_threshold"] if soft else 0.0, "float32"), dtype)
        self.minus_one = cast(fconst(-1.0, "float32"), dtype)

    def get(self, name: str):
        return _load(self.b[name], 0)

    def put(self, name: str, value):
        return _store(self.b[name], value, 0)

    def score(self, i, j):
        return _load(self.b["out_data"], i, j, self.attrs["score_index"])

    def invalidate(self, i, j):
        """Row j of out_data becomes -1s and its box index -1."""
        rows = _serial(self.length, lambda k: _store(self.b["out_data"], self.minus_one, i, j, k), "k")
        return loops.sequence(rows, _store(self.b["out_box_indices"], _int(-1), i, j))

    def sort_and_copy(self, i):
        """out_data rows in descending score order of the first valid_count boxes, the top_k of them."""
        data, order, valid = self.b["data"], self.b["order"], _load(self.b["valid_count"], i)

        def rank_of(j):
            s_j = _load(data, i, j, self.attrs["score_index"])

            def count(k):
                s_k = _load(data, i, k, self.attrs["score_index"])
                before = tir.Or(tir.GT(s_k, s_j), all_of(tir.EQ(s_k, s_j), tir.LT(k, j)))
                return _when(all_of(tir.LT(cast(k, I32), valid), before), self.put("rank", self.get("rank") + _int(1)))

            scan = _serial(self.anchors, count, "k")
            place = _store(order, cast(j, I32), self.get("rank"))
            return _when(tir.LT(cast(j, I32), valid), loops.sequence(self.put("rank", _int(0)), scan, place))

        top_k = self.attrs["top_k"]
        nkeep = self.put("nkeep", valid)
        if top_k > 0:
            nkeep = loops.sequence(nkeep, _when(tir.LT(_int(top_k), self.get("nkeep")), self.put("nkeep", _int(top_k))))

        def copy(j):
            source = _load(order, j)
            rows = _serial(self.length, lambda k: _store(self.b["out_data"], _load(data, i, source, k), i, j, k), "k")
            kept = loops.sequence(rows, _store(self.b["out_box_indices"], source, i, j))
            return _when(tir.LT(cast(j, I32), self.get("nkeep")), kept, self.invalidate(i, j))

        return loops.sequence(_serial(self.anchors, rank_of, "j"), nkeep, _serial(self.anchors, copy, "j"))

    def iou(self, i, a, b):
        start, out = self.attrs["coord_start"], self.b["out_data"]

        def corners(row):
            c = [_load(out, i, row, start + n) for n in range(4)]
            return tir.Min(c[0], c[2]), tir.Min(c[1], c[3]), tir.Max(c[0], c[2]), tir.Max(c[1], c[3])

        (al, at, ar, ab), (bl, bt, br, bb) = corners(a), corners(b)
        zero = cast(fconst(0.0, "float32"), self.dtype)
        width = tir.Max(zero, tir.Min(ar, br) - tir.Max(al, bl))
        height = tir.Max(zero, tir.Min(ab, bb) - tir.Max(at, bt))
        intersection = height * width
        union = (ar - al) * (ab - at) + (br - bl) * (bb - bt) - intersection
        return tir.Select(tir.LE(union, zero), zero, intersection / union)

    def same_class(self, i, a, b):
        id_index = self.attrs["id_index"]
        if self.attrs["force_suppress"] or id_index < 0:
            return None
        return tir.EQ(_load(self.b["out_data"], i, a, id_index), _load(self.b["out_data"], i, b, id_index))

    def under_limit(self):
        limit = self.attrs["max_output_size"]
        return tir.LT(self.get("num_valid"), _int(limit)) if limit > 0 else tir.IntImm("bool", 1)

    def hard_nms(self, i):
        nkeep, iou_threshold = self.get("nkeep"), cast(fconst(self.attrs["iou_threshold"], "float32"), self.dtype)

        def keep(j):
            def suppress(k):
                drop = loops.sequence(_store(self.b["out_data"], self.minus_one, i, k, self.attrs["score_index"]),
                                      _store(self.b["out_box_indices"], _int(-1), i, k))
                stmt = _when(tir.GE(self.iou(i, j, k), iou_threshold), drop)
                same = self.same_class(i, j, k)
                stmt = stmt if same is None else _when(same, stmt)
                return _when(all_of(tir.LT(cast(k, I32), nkeep), tir.GT(k, j), tir.GT(self.score(i, k), self.thresh)), stmt)

            chosen = loops.sequence(self.put("num_valid", self.get("num_valid") + _int(1)),
                                    _serial(self.anchors, suppress, "k"))
            stmt = _when(all_of(tir.GT(self.score(i, j), self.thresh), self.under_limit()), chosen, self.invalidate(i, j))
            return _when(tir.LT(cast(j, I32), nkeep), stmt)

        return loops.sequence(self.put("num_valid", _int(0)), _serial(self.anchors, keep, "j"))

    def soft_nms(self, i):
        nkeep, out, boxes = self.get("nkeep"), self.b["out_data"], self.b["out_box_indices"]
        num_valid, best = self.get("num_valid"), self.get("best_idx")
        iou_threshold = cast(fconst(self.attrs["iou_threshold"], "float32"), self.dtype)
        scale = cast(fconst(-0.5 / self.attrs["soft_nms_sigma"], "float32"), self.dtype)

        def find(j):
            better = all_of(tir.LT(cast(j, I32), nkeep), tir.GE(cast(j, I32), num_valid),
                            tir.GE(_load(boxes, i, j), _int(0)), tir.GT(self.score(i, j), self.get("best_score")))
            return _when(better, loops.sequence(self.put("best_idx", cast(j, I32)), self.put("best_score", self.score(i, j))))

        def swap_rows(k):
            return loops.sequence(self.put("tmp_val", _load(out, i, num_valid, k)),
                                  _store(out, _load(out, i, best, k), i, num_valid, k),
                                  _store(out, self.get("tmp_val"), i, best, k))

        swap = _when(tir.NE(best, num_valid), loops.sequence(
            self.put("tmp_idx", _load(boxes, i, num_valid)), _store(boxes, _load(boxes, i, best), i, num_valid),
            _store(boxes, self.get("tmp_idx"), i, best), _serial(self.length, swap_rows, "k")))

        def decay(j):
            iou = self.iou(i, num_valid, j)
            score_at = (i, j, self.attrs["score_index"])
            decayed = loops.sequence(
                _store(out, _load(out, *score_at) * tir.Call(self.dtype, "tir.exp", (scale * iou * iou,)), *score_at),
                _when(tir.LE(_load(out, *score_at), self.thresh), _store(boxes, _int(-1), i, j)))
            stmt = _when(tir.GE(iou, iou_threshold), _store(boxes, _int(-1), i, j), decayed)
            same = self.same_class(i, num_valid, j)
            stmt = stmt if same is None else _when(same, stmt)
            return _when(all_of(tir.LT(cast(j, I32), nkeep), tir.GT(cast(j, I32), num_valid),
                                tir.GE(_load(boxes, i, j), _int(0)), tir.GT(self.score(i, j), self.thresh)), stmt)

        chosen = loops.sequence(swap, _serial(self.anchors, decay, "j"), self.put("num_valid", num_valid + _int(1)))
        round_ = loops.sequence(self.put("best_idx", _int(-1)), self.put("best_score", self.thresh),
                                _serial(self.anchors, find, "j"), _when(tir.GE(best, _int(0)), chosen))
        rounds = _serial(self.anchors, lambda r: _when(all_of(tir.LT(cast(r, I32), nkeep), self.under_limit()), round_), "r")
        return loops.sequence(self.put("num_valid", _int(0)), rounds)

    def finish_soft(self, i):
        num_valid, boxes = self.get("num_valid"), self.b["out_box_indices"]

        def tail(j):
            mapped = _store(boxes, _load(self.b["indices"], i, _load(boxes, i, j)), i, j)
            if not self.attrs["return_indices"]:
                return _when(tir.GE(cast(j, I32), num_valid), self.invalidate(i, j))
            return _when(tir.LT(cast(j, I32), num_valid), mapped, self.invalidate(i, j))

        stmts = [_serial(self.anchors, tail, "j")]
        if self.attrs["return_indices"]:
            stmts.insert(0, _store(self.b["out_valid_box_count"], num_valid, i, 0))
        return loops.sequence(*stmts)

    def finish_hard(self, i):
        boxes, slot = self.b["out_box_indices"], self.get("valid_idx")

        def gather(j):
            mapped = _store(boxes, _load(self.b["indices"], i, _load(boxes, i, j)), i, slot)
            return _when(tir.GE(_load(boxes, i, j), _int(0)), loops.sequence(mapped, self.put("valid_idx", slot + _int(1))))

        clear = _serial(self.anchors, lambda j: _when(tir.GE(cast(j, I32), slot), _store(boxes, _int(-1), i, j)), "j")
        return loops.sequence(self.put("valid_idx", _int(0)), _serial(self.anchors, gather, "j"),
                              _store(self.b["out_valid_box_count"], slot, i, 0), clear)

    def to_bottom(self, i):
        """The boxes whose score is >= 0 moved to the top of `rearranged`, -1 rows below."""
        out, moved, slot = self.b["out_data"], self.b["rearranged"], self.get("valid_idx")

        def move(j):
            rows = _serial(self.length, lambda k: _store(moved, _load(out, i, j, k), i, slot, k), "k")
            zero = cast(fconst(0.0, "float32"), self.dtype)
            return _when(tir.GE(self.score(i, j), zero), loops.sequence(rows, self.put("valid_idx", slot + _int(1))))

        def fill(j):
            rows = _serial(self.length, lambda k: _store(moved, self.minus_one, i, j, k), "k")
            return _when(tir.GE(cast(j, I32), slot), rows)

        return loops.sequence(self.put("valid_idx", _int(0)), _serial(self.anchors, move, "j"),
                              _serial(self.anchors, fill, "j"))

    def body(self, i):
        soft = self.attrs["soft_nms_sigma"] > 0.0
        stmts = [self.sort_and_copy(i)]
        if soft:
            stmts += [self.soft_nms(i), self.finish_soft(i)]
        else:
            stmts.append(self.hard_nms(i))
            if self.attrs["return_indices"]:
                stmts.append(self.finish_hard(i))
        if not self.attrs["return_indices"] and self.attrs["invalid_to_bottom"]:
            stmts.append(self.to_bottom(i))
        return loops.sequence(*stmts)


def _nms_legalize(call, context):
    data_info, count_info, indices_info = (tensor_info(call, n) for n in range(3))
    if None in (data_info.shape_values, count_info.shape_values, indices_info.shape_values):
        return None
    attrs, dtype = call.attrs, data_info.dtype
    batch, anchors, _ = shape = data_info.shape_values
    inputs = {"data": loops.buffer("data", shape, dtype), "valid_count": loops.buffer("valid_count", (batch,), I32),
              "indices": loops.buffer("indices", (batch, anchors), I32)}
    outputs = {"out_data": loops.buffer("out_data", shape, dtype),
               "out_box_indices": loops.buffer("out_box_indices", (batch, anchors), I32)}
    if attrs["return_indices"]:
        outputs["out_valid_box_count"] = loops.buffer("out_valid_box_count", (batch, int64(1)), I32)
    elif attrs["invalid_to_bottom"]:
        outputs["rearranged"] = loops.buffer("rearranged", shape, dtype)
    scratch = {name: loops.buffer(name, (1,), I32) for name in ("rank", "nkeep", "num_valid", "best_idx", "tmp_idx",
                                                                 "valid_idx")}
    scratch.update({name: loops.buffer(name, (1,), dtype) for name in ("best_score", "tmp_val")})
    scratch["order"] = loops.buffer("order", (anchors,), I32)
    # Which kernel buffers are the call's outputs, in TVM's order.
    if attrs["return_indices"]:
        names = ["out_box_indices", "out_valid_box_count"]
        if attrs["soft_nms_sigma"] > 0.0:
            names.insert(0, "out_data")
    else:
        names = ["rearranged" if attrs["invalid_to_bottom"] else "out_data"]
    scratch.update({name: buffer for name, buffer in outputs.items() if name not in names})
    builder = _NmsKernel(attrs, shape, dtype, {**inputs, **outputs, **scratch})
    body = _serial(batch, builder.body, "i")
    name = context.unique_name("non_max_suppression")
    params = list(inputs.values()) + [outputs[n] for n in names]
    context.new_functions[name] = kernel(params, body, scratch.values())
    return call_tir(name, call.args, _nms_infer(call))


register(OpDef(
    "relax.vision.non_max_suppression", ("data", "valid_count", "indices"),
    (AttrSpec("max_output_size", -1), AttrSpec("iou_threshold", 0.5), AttrSpec("force_suppress", False),
     AttrSpec("top_k", -1), AttrSpec("coord_start", 2), AttrSpec("score_index", 1), AttrSpec("id_index", 0),
     AttrSpec("return_indices", True), AttrSpec("invalid_to_bottom", False), AttrSpec("soft_nms_sigma", 0.0),
     AttrSpec("score_threshold", 0.0)),
    _nms_infer, "opaque", _nms_legalize,
    "greedy non-maximum suppression of the boxes ranked by score (soft-NMS with soft_nms_sigma > 0)",
))
