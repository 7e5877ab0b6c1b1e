"""R.vision: roi_align, roi_pool, get_valid_counts and non_max_suppression against
numpy references (written from TVM 0.27's semantics and checked once against its
legalized kernels), plus struct info and located errors."""

import math

import numpy as np
import pytest
from numeric import run_op

from relax import ir
from relax.build import build
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of
from relax.script import parse
from relax.vm import VirtualMachine

FEATURES = np.random.default_rng(0).standard_normal((2, 2, 6, 7)).astype("float32")
# [batch, x1, y1, x2, y2]: inside, partly outside, smaller than a pixel, wholly outside.
ROIS = np.array([[0, 1.0, 1.0, 9.0, 7.0], [1, -2.0, 0.5, 5.0, 13.0], [0, 3.2, 2.1, 3.5, 2.4],
                 [1, 10.0, 10.0, 20.0, 16.0]], "float32")
# [class, score, x1, y1, x2, y2]
BOXES = np.array([
    [[0, 0.9, 0, 0, 4, 4], [0, 0.8, 1, 1, 5, 5], [1, 0.7, 0, 0, 4, 4], [0, 0.1, 6, 6, 8, 8],
     [-1, 0.95, 0, 0, 1, 1], [0, 0.6, 5, 5, 8, 8]],
    [[2, 0.3, 0, 0, 2, 2], [2, 0.5, 0, 0, 2, 2.2], [2, 0.4, 4, 4, 2, 2], [1, 0.9, 3, 3, 5, 5],
     [2, 0.05, 0, 0, 1, 1], [1, 0.5, 3, 3, 5, 5.5]]], "float32")


def roi_align_reference(data, rois, pooled, scale):
    """avg mode, NCHW, adaptive sampling grid, legacy one-pixel clamp."""
    _, channels, height, width = data.shape
    out = np.zeros((len(rois), channels) + pooled, "float32")

    def sample(n, y, x):
        if y < -1 or x < -1 or y > height or x > width:
            return np.zeros(channels)
        y, x = min(max(y, 0.0), height - 1), min(max(x, 0.0), width - 1)
        y0, x0, y1, x1 = math.floor(y), math.floor(x), math.ceil(y), math.ceil(x)
        ly, lx = y - y0, x - x0
        return (data[n, :, y0, x0] * (1 - ly) * (1 - lx) + data[n, :, y0, x1] * (1 - ly) * lx
                + data[n, :, y1, x0] * ly * (1 - lx) + data[n, :, y1, x1] * ly * lx)

    for r, (n, *box) in enumerate(rois.astype("float64")):
        x1, y1, x2, y2 = (v * scale for v in box)
        roi_h, roi_w = max(y2 - y1, 1.0), max(x2 - x1, 1.0)
        bin_h, bin_w = roi_h / pooled[0], roi_w / pooled[1]
        grid_h, grid_w = math.ceil(bin_h), math.ceil(bin_w)
        for ph in range(pooled[0]):
            for pw in range(pooled[1]):
                total = sum(sample(int(n), y1 + ph * bin_h + (a + 0.5) * bin_h / grid_h,
                                   x1 + pw * bin_w + (b + 0.5) * bin_w / grid_w)
                            for a in range(grid_h) for b in range(grid_w))
                out[r, :, ph, pw] = total / (grid_h * grid_w)
    return out


def roi_pool_reference(data, rois, pooled, scale):
    _, channels, height, width = data.shape
    out = np.zeros((len(rois), channels) + pooled, "float32")
    for r, (n, *box) in enumerate(rois):
        x1, y1, x2, y2 = (int(np.floor(v * np.float32(scale) + 0.5)) for v in box)
        bin_h, bin_w = max(y2 - y1 + 1, 1) / pooled[0], max(x2 - x1 + 1, 1) / pooled[1]
        for ph in range(pooled[0]):
            for pw in range(pooled[1]):
                h0, h1 = (min(max(v + y1, 0), height) for v in (math.floor(ph * bin_h), math.ceil((ph + 1) * bin_h)))
                w0, w1 = (min(max(v + x1, 0), width) for v in (math.floor(pw * bin_w), math.ceil((pw + 1) * bin_w)))
                if h1 > h0 and w1 > w0:
                    out[r, :, ph, pw] = data[int(n), :, h0:h1, w0:w1].max(axis=(1, 2))
    return out


def valid_counts_reference(data, threshold, id_index=0, score_index=1):
    valid = data[:, :, score_index] > threshold
    if id_index >= 0:
        valid &= data[:, :, id_index] >= 0
    out, indices = -np.ones_like(data), -np.ones(data.shape[:2], "int32")
    for b in range(len(data)):
        kept = np.flatnonzero(valid[b])
        out[b, :len(kept)], indices[b, :len(kept)] = data[b, kept], kept
    return valid.sum(axis=1).astype("int32"), out, indices


def iou(a, b):
    a = (min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3]))
    b = (min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3]))
    inter = max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return 0.0 if union <= 0 else inter / union


def nms_reference(data, valid_count, indices, iou_threshold=0.5):
    """Hard NMS returning (box_indices, valid_box_count), per class (id_index 0)."""
    out_indices = -np.ones(data.shape[:2], "int32")
    counts = np.zeros((len(data), 1), "int32")
    for b in range(len(data)):
        order = sorted(range(valid_count[b]), key=lambda j: -data[b, j, 1])  # stable: ties keep order
        alive = list(order)
        kept = []
        for j in order:
            if j not in alive or data[b, j, 1] <= 0:
                continue
            kept.append(j)
            alive = [k for k in alive if k == j or not (data[b, k, 0] == data[b, j, 0]
                                                         and iou(data[b, j, 2:], data[b, k, 2:]) >= iou_threshold)]
        # Kept boxes in score order, mapped through indices.
        ranked = [j for j in order if j in kept]
        out_indices[b, :len(ranked)] = indices[b, ranked]
        counts[b, 0] = len(ranked)
    return out_indices, counts


def test_roi_align():
    expected = roi_align_reference(FEATURES, ROIS, (2, 3), 0.5)
    got = run_op("vision.roi_align", FEATURES, ROIS, pooled_size=(2, 3), spatial_scale=0.5)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_roi_align_nhwc_max():
    """NHWC reads the same samples; max mode keeps the largest."""
    nchw = run_op("vision.roi_align", FEATURES, ROIS, pooled_size=2, spatial_scale=0.5, sample_ratio=2, mode="max")
    nhwc = run_op("vision.roi_align", FEATURES.transpose(0, 2, 3, 1).copy(), ROIS, pooled_size=2, spatial_scale=0.5,
                  sample_ratio=2, mode="max", layout="NHWC")
    np.testing.assert_allclose(nhwc, nchw.transpose(0, 2, 3, 1), rtol=0, atol=0)
    assert nchw.shape == (4, 2, 2, 2) and np.all(nchw[3] == 0)  # wholly outside: every sample reads 0


def test_roi_pool():
    expected = roi_pool_reference(FEATURES, ROIS, (2, 3), 0.5)
    got = run_op("vision.roi_pool", FEATURES, ROIS, pooled_size=(2, 3), spatial_scale=0.5)
    np.testing.assert_allclose(got, expected, rtol=0, atol=0)


def test_get_valid_counts():
    for id_index in (0, -1):
        expected = valid_counts_reference(BOXES, 0.2, id_index)
        got = run_op("vision.get_valid_counts", BOXES, score_threshold=0.2, id_index=id_index)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


def test_non_max_suppression():
    count, data, indices = valid_counts_reference(BOXES, 0.2)
    expected = nms_reference(data, count, indices)
    got = run_op("vision.non_max_suppression", data, count, indices)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    # Values from TVM 0.27: max_output_size keeps the best box of every batch element only.
    boxes, kept = run_op("vision.non_max_suppression", data, count, indices, max_output_size=1, id_index=-1)
    np.testing.assert_array_equal(kept, [[1], [1]])
    np.testing.assert_array_equal(boxes[:, 0], [0, 3])


def test_non_max_suppression_data_and_soft():
    """Values from TVM 0.27's kernels: suppressed rows become -1 (moved to the bottom
    with invalid_to_bottom); soft-NMS decays box 1's score by exp(-iou^2)."""
    count, data, indices = valid_counts_reference(BOXES, 0.2)
    out = run_op("vision.non_max_suppression", data, count, indices, return_indices=False,
                 invalid_to_bottom=True, force_suppress=True, top_k=3)
    np.testing.assert_array_equal(out[:, :, 1], np.float32([[0.9, 0.8, -1, -1, -1, -1], [0.9, 0.5, -1, -1, -1, -1]]))
    decayed, boxes, kept = run_op("vision.non_max_suppression", data, count, indices, soft_nms_sigma=0.5,
                                  score_threshold=0.3)
    np.testing.assert_array_equal(boxes, [[0, 2, 1, 5, -1, -1], [3, 1, 2, -1, -1, -1]])
    np.testing.assert_array_equal(kept, [[4], [3]])
    np.testing.assert_allclose(decayed[0, 2, 1], 0.8 * np.exp(-(9 / 23) ** 2), rtol=1e-6)


# -- struct info ---------------------------------------------------------------------------------
def tensor(dims, dtype="float32"):
    dims = tuple(tir.IntImm("int64", d) if isinstance(d, int) else d for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.vision.{op}"), args, ir.FrozenDict(attrs)))


def test_struct_info():
    n = tir.Var("n", "int64")
    info = infer("roi_align", tensor((1, 3, 8, 8)), tensor((n, 5)), pooled_size=(2, 3), spatial_scale=1.0)
    assert info.shape_values[0] is n and [d.value for d in info.shape_values[1:]] == [3, 2, 3]
    info = infer("roi_align", tensor((1, 8, 8, 3)), tensor((2, 5)), pooled_size=2, spatial_scale=1.0, layout="NHWC")
    assert [d.value for d in info.shape_values] == [2, 2, 2, 3]
    fields = infer("get_valid_counts", tensor((2, 6, 6))).fields
    assert [f.dtype for f in fields] == ["int32", "float32", "int32"]
    fields = infer("non_max_suppression", tensor((2, 6, 6)), tensor((2,), "int32"), tensor((2, 6), "int32")).fields
    assert [[d.value for d in f.shape_values] for f in fields] == [[2, 6], [2, 1]]
    single = infer("non_max_suppression", tensor((2, 6, 6)), tensor((2,), "int32"), tensor((2, 6), "int32"),
                   return_indices=False)
    assert isinstance(single, ir.TensorStructInfo)


@pytest.mark.parametrize("op, args, attrs, message", [
    ("roi_align", ((1, 3, 8, 8), (2, 4)), {"pooled_size": 2, "spatial_scale": 1.0}, "shape \\(num_roi, 5\\)"),
    ("roi_align", ((3, 8, 8), (2, 5)), {"pooled_size": 2, "spatial_scale": 1.0}, "to be 4-D"),
    ("roi_align", ((1, 3, 8, 8), (2, 5)), {"pooled_size": 2, "spatial_scale": 1.0, "mode": "sum"}, "mode"),
    ("roi_pool", ((1, 8, 8, 3), (2, 5)), {"pooled_size": 2, "spatial_scale": 1.0, "layout": "NHWC"}, "layout"),
    ("get_valid_counts", ((2, 6, 6),), {"score_index": 7}, "score_index must be in \\[0, 6\\)"),
])
def test_errors(op, args, attrs, message):
    with pytest.raises(DiagnosticError, match=message):
        infer(op, *(tensor(a) for a in args), **attrs)


def test_nms_errors():
    data = tensor((2, 6, 6))
    with pytest.raises(DiagnosticError, match="valid_count must have dtype int32"):
        infer("non_max_suppression", data, tensor((2,)), tensor((2, 6), "int32"))
    with pytest.raises(DiagnosticError, match="coord_start"):
        infer("non_max_suppression", data, tensor((2,), "int32"), tensor((2, 6), "int32"), coord_start=4)


MODULE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 2, 6, 7), dtype="float32"), rois: R.Tensor((4, 5), dtype="float32"), d: R.Tensor((2, 6, 6), dtype="float32")) -> R.Tuple(R.Tensor((4, 2, 2, 3), dtype="float32"), R.Tensor((4, 2, 2, 3), dtype="float32"), R.Tensor((2, 6), dtype="int32")):
        a: R.Tensor((4, 2, 2, 3), dtype="float32") = R.vision.roi_align(x, rois, pooled_size=[2, 3], spatial_scale=0.5, sample_ratio=-1, aligned=False, layout="NCHW", mode="avg")
        b: R.Tensor((4, 2, 2, 3), dtype="float32") = R.vision.roi_pool(x, rois, pooled_size=[2, 3], spatial_scale=0.5, layout="NCHW")
        c: R.Tuple(R.Tensor((2,), dtype="int32"), R.Tensor((2, 6, 6), dtype="float32"), R.Tensor((2, 6), dtype="int32")) = R.vision.get_valid_counts(d, score_threshold=0.20000000000000001, id_index=0, score_index=1)
        e: R.Tuple(R.Tensor((2, 6), dtype="int32"), R.Tensor((2, 1), dtype="int32")) = R.vision.non_max_suppression(c[1], c[0], c[2], max_output_size=-1, iou_threshold=0.5, force_suppress=False, top_k=-1, coord_start=2, score_index=1, id_index=0, return_indices=True, invalid_to_bottom=False, soft_nms_sigma=0.0, score_threshold=0.0)
        return (a, b, e[0])
'''


def test_vision_module_compiles_and_matches_numpy():
    """The ops through the whole compiler (parse, -O2 build for the host, VM run), against
    the numpy references above: get_valid_counts feeds non_max_suppression."""
    vm = VirtualMachine(build(parse(MODULE), "llvm", 2), "cpu")
    aligned, pooled, kept = vm["main"](FEATURES, ROIS, BOXES)
    np.testing.assert_allclose(aligned, roi_align_reference(FEATURES, ROIS, (2, 3), 0.5), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(pooled, roi_pool_reference(FEATURES, ROIS, (2, 3), 0.5))
    count, data, indices = valid_counts_reference(BOXES, 0.2)
    np.testing.assert_array_equal(kept, nms_reference(data, count, indices)[0])
