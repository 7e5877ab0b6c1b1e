"""R.vision.multibox_transform_loc and R.vision.all_class_non_max_suppression against
numpy references (written from TVM 0.27's semantics and checked once against its
legalized kernels), their struct info and located errors, and the onnx format's
data-dependent result through the whole compiler."""

import numpy as np
import pytest
from numeric import run_op
from test_vision import iou

from relax import ir
from relax.build import build
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of
from relax.script import parse
from relax.vm import VirtualMachine

RNG = np.random.default_rng(0)
CLS = RNG.standard_normal((2, 3, 4)).astype("float32")
LOC = RNG.standard_normal((2, 16)).astype("float32")
# [left, top, right, bottom] priors
ANCHOR = np.array([[[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 1.0, 1.0], [0.3, 0.1, 0.4, 0.9], [0.5, 0.5, 0.7, 0.8]]], "float32")
BOXES = RNG.uniform(0, 4, (2, 5, 4)).astype("float32")
SCORES = RNG.uniform(0, 1, (2, 3, 5)).astype("float32")


def multibox_reference(cls, loc, anchor, clip=False, threshold=0.0, variances=(1.0, 1.0, 1.0, 1.0),
                       keep_background=True, apply_softmax=True):
    left, top, right, bottom = (anchor[0, :, k] for k in range(4))
    ex, ey, ew, eh = (loc.reshape(len(loc), -1, 4)[:, :, k] for k in range(4))
    vx, vy, vw, vh = variances
    height, width = bottom - top, right - left
    y, x = ey * vy * height + (top + bottom) / 2, ex * vx * width + (left + right) / 2
    half_h, half_w = 0.5 * np.exp(eh * vh) * height, 0.5 * np.exp(ew * vw) * width
    boxes = np.stack([y - half_h, x - half_w, y + half_h, x + half_w], axis=-1)
    if clip:
        boxes = np.clip(boxes, 0.0, 1.0)
    scores = cls
    if apply_softmax:
        exp = np.exp(cls - cls.max(axis=1, keepdims=True))
        scores = exp / exp.sum(axis=1, keepdims=True)
    scores = scores * (scores >= threshold)
    if not keep_background:
        scores[:, 0] = 0
    return boxes.astype("float32"), scores.astype("float32")


def selected(boxes, scores, max_boxes, iou_threshold, score_threshold):
    """{(batch, class): the kept box indices in descending score order}."""
    result = {}
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            order = [j for j in np.argsort(-scores[b, c], kind="stable") if scores[b, c, j] > score_threshold]
            kept = []
            for j in order:
                if iou_threshold > 0 and len(kept) < max_boxes and all(
                        iou(boxes[b, k], boxes[b, j]) < iou_threshold for k in kept):
                    kept.append(j)
            result[b, c] = kept
    return result


def onnx_reference(*args):
    rows = [[b, c, j] for (b, c), kept in selected(*args).items() for j in kept]
    return np.array(rows, "int64").reshape(-1, 3)


def tensorflow_reference(boxes, scores, *args):
    batch, classes, anchors = scores.shape
    indices, kept_scores = np.zeros((batch, classes * anchors, 2), "int64"), np.zeros((batch, classes * anchors), "float32")
    counts = np.zeros(batch, "int64")
    for (b, c), kept in selected(boxes, scores, *args).items():
        for j in kept:
            indices[b, counts[b]], kept_scores[b, counts[b]] = (c, j), scores[b, c, j]
            counts[b] += 1
    return indices, kept_scores, counts


def test_multibox_transform_loc():
    for attrs in ({}, {"clip": True, "threshold": 0.3, "variances": (0.1, 0.2, 0.3, 0.4), "keep_background": False},
                  {"apply_softmax": False, "threshold": 0.1}):
        got = run_op("vision.multibox_transform_loc", CLS, LOC, ANCHOR, **attrs)
        for g, e in zip(got, multibox_reference(CLS, LOC, ANCHOR, **attrs)):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_all_class_nms_tensorflow():
    """Values checked against TVM 0.27: class 0's kept boxes first, then class 1's, zeros after."""
    scalars = (np.array(0.3, "float32"), np.array([0.2], "float32"))
    got = run_op("vision.all_class_non_max_suppression", BOXES, SCORES, ir.Constant(np.array(2, "int64")), *scalars,
                 output_format="tensorflow")
    for g, e in zip(got, tensorflow_reference(BOXES, SCORES, 2, 0.3, 0.2)):
        np.testing.assert_array_equal(g, e)


MODULE = '''
@I.ir_module
class Module:
    @R.function
    def main(b: R.Tensor((2, 5, 4), dtype="float32"), s: R.Tensor((2, 3, 5), dtype="float32"), i: R.Tensor((), dtype="float32"), t: R.Tensor((), dtype="float32"), m: R.Tensor((), dtype="int64")):
        r = R.vision.all_class_non_max_suppression(b, s, R.const(2, "int64"), i, t, output_format="onnx")
        all_kept = R.vision.all_class_non_max_suppression(b, s, m, i, t, output_format="onnx")
        rows = R.astype(r[0], "int32")
        return (rows, r[1], all_kept[0])
'''


def test_all_class_nms_onnx_compiles_with_data_dependent_rows():
    """Through parse, -O2 build and the VM: the selected rows, cut to the count at run time.
    A constant max_output_boxes_per_class limits each class; a variable one does not (TVM
    0.27 reads only a constant, otherwise allowing num_boxes). The astype reads the rows
    at their run-time count (LegalizeOps rebinds the result to a symbolic row count)."""
    vm = VirtualMachine(build(parse(MODULE), "llvm", 2), "cpu")
    for iou_threshold, score_threshold in ((0.3, 0.2), (0.0, 0.2)):
        scalars = (np.array(iou_threshold, "float32"), np.array(score_threshold, "float32"))
        rows, count, all_rows = vm["main"](BOXES, SCORES, *scalars, np.array(1, "int64"))
        expected = onnx_reference(BOXES, SCORES, 2, iou_threshold, score_threshold)
        assert rows.dtype == np.int32
        np.testing.assert_array_equal(rows, expected)
        np.testing.assert_array_equal(count, [len(expected)])
        np.testing.assert_array_equal(all_rows, onnx_reference(BOXES, SCORES, 5, iou_threshold, score_threshold))
    assert 0 < len(onnx_reference(BOXES, SCORES, 2, 0.3, 0.2)) < len(onnx_reference(BOXES, SCORES, 5, 0.3, 0.2))


# -- struct info ---------------------------------------------------------------------------------
def tensor(dims, dtype="float32"):
    if dims is None:
        return ir.Var("x", ir.TensorStructInfo(None, dtype, 3))
    dims = tuple(tir.IntImm("int64", d) if isinstance(d, int) else d for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.vision.{op}"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [str(d) if not isinstance(d, tir.IntImm) else d.value for d in info.shape_values]


def test_struct_info():
    n = tir.Var("n", "int64")
    boxes, scores = infer("multibox_transform_loc", tensor((2, 3, n)), tensor((2, n * 4)), tensor((1, n, 4))).fields
    assert boxes.shape_values[1] is n and scores.shape_values[2] is n
    unknown = infer("multibox_transform_loc", tensor(None), tensor((2, 16)), tensor((1, 4, 4))).fields
    assert [f.ndim for f in unknown] == [3, 3] and unknown[0].shape_values is None
    scalars = (tensor((), "int64"), tensor(()), tensor(()))
    rows, count = infer("all_class_non_max_suppression", tensor((2, 5, 4)), tensor((2, 3, 5)), *scalars,
                        output_format="onnx").fields
    assert dims(rows) == [30, 3] and dims(count) == [1] and rows.dtype == count.dtype == "int64"
    tf = infer("all_class_non_max_suppression", tensor((2, n, 4)), tensor((2, 3, n), "float16"), *scalars,
               output_format="tensorflow").fields
    assert [f.dtype for f in tf] == ["int64", "float32", "int64"] and [f.ndim for f in tf] == [3, 2, 1]
    assert dims(tf[2]) == [2] and tf[1].shape_values[1] is not None


@pytest.mark.parametrize("op, args, attrs, message", [
    ("multibox_transform_loc", ((2, 3, 4), (2, 17), (1, 4, 4)), {}, "divisible by 4"),
    ("multibox_transform_loc", ((2, 3, 4), (2, 20), (1, 4, 4)), {}, "must equal 4\\*N"),
    ("multibox_transform_loc", ((2, 3, 4), (2, 16), (1, 4, 3)), {}, "anchor.shape\\[2\\] must be 4"),
    ("multibox_transform_loc", ((2, 3, 4), (2, 16), (1, 4, 4)), {"variances": (1.0, 2.0)}, "variances"),
    ("all_class_non_max_suppression", ((5, 4), (2, 3, 5), (), (), ()), {}, "boxes .* must be 3-D"),
    ("all_class_non_max_suppression", ((2, 5, 4), (2, 3, 5), (), (), ()), {"output_format": "coco"}, "output_format"),
])
def test_errors(op, args, attrs, message):
    with pytest.raises(DiagnosticError, match=message):
        infer(op, *(tensor(a) for a in args), **attrs)


def test_multibox_dtype_error():
    with pytest.raises(DiagnosticError, match="cls_pred and loc_pred dtype must match"):
        infer("multibox_transform_loc", tensor((2, 3, 4)), tensor((2, 16), "float16"), tensor((1, 4, 4)))
