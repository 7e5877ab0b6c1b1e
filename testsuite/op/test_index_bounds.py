"""Index data out of range stops the kernel with an error, never reads or writes outside
a buffer (issue 16): every op that addresses memory with the values of an index tensor
(and nll_loss, whose targets index the predictions, and roi_align / roi_pool, whose rois name a batch),
through the TIR interpreter, and take / scatter_elements / index_put compiled for the host.
In-range results (negative indices included) are checked by the ops' own numeric tests."""

import numpy as np
import pytest

from numeric import run_op
from relax.build import build
from relax.script import parse
from relax.tir.interpreter import InterpreterError
from relax.vm import VirtualMachine

X = np.arange(12, dtype="float32").reshape(3, 4)
U = np.ones((3, 4), "float32")
ROWS = np.array([[0, 1, 2, 0], [2, 0, 1, 1], [1, 2, 0, 2]], "int64")
BAD_ROWS = ROWS.copy()
BAD_ROWS[1, 2] = 3  # one past the end of axis 0 (extent 3)
FEATURES = np.ones((2, 1, 3, 3), "float32")


@pytest.mark.parametrize("op, args, attrs, bad, extent", [
    ("take", (X, np.array([1, 4], "int64")), {"axis": 1}, 4, 4),
    ("take", (X, np.array([-13], "int32")), {}, -13, 12),  # axis None: the flattened input
    ("gather_elements", (X, BAD_ROWS), {"axis": 0}, 3, 3),
    ("scatter_elements", (X, BAD_ROWS, U), {"axis": 0}, 3, 3),
    ("gather_nd", (X, np.array([[0, 1], [-4, 0]], "int64")), {}, -4, 3),
    ("scatter_nd", (X, np.array([[2, 9]], "int64"), np.ones(1, "float32")), {}, 9, 4),
    ("index_tensor", (X, [np.array([0, -5], "int64")]), {}, -5, 3),
    ("index_put", (X, [np.array([0], "int64"), np.array([2**40], "int64")], np.ones(1, "float32")), {}, 2**40, 4),
    # A target addresses the predictions; an ignored one (-100) reads nothing and passes.
    ("nn.nll_loss", (X, np.array([-100, 4, 0], "int64")), {"reduction": "none", "ignore_index": -100}, 4, 4),
    # A region's batch index (rois[:, 0]) addresses the feature map; its coordinates are clamped.
    ("vision.roi_align", (FEATURES, np.array([[2, 0, 0, 2, 2]], "float32")), {"pooled_size": 1, "spatial_scale": 1.0},
     2, 2),
    ("vision.roi_pool", (FEATURES, np.array([[-3, 0, 0, 2, 2]], "float32")), {"pooled_size": 1, "spatial_scale": 1.0},
     -3, 2),
])
def test_out_of_range_index_is_an_error(op, args, attrs, bad, extent):
    # try/except rather than pytest.raises: the CUDA tests collect these kernels by running
    # this test with run_op stubbed out (cuda_codegen_op_kernels.py), and expect an Exception.
    try:
        run_op(op, *args, **attrs)
        message = "no error"
    except InterpreterError as error:
        message = str(error)
    assert message == f"index {bad} out of range [-{extent}, {extent}) in R.{op}"


def test_take_clip_and_wrap_keep_their_meaning():
    idx = np.array([-9, 5, 2], "int64")
    np.testing.assert_array_equal(run_op("take", X, idx, axis=1, mode="clip"), np.take(X, idx, axis=1, mode="clip"))
    np.testing.assert_array_equal(run_op("take", X, idx, axis=1, mode="wrap"), np.take(X, idx, axis=1, mode="wrap"))


MODULE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4), dtype="float32"), i: R.Tensor((2,), dtype="int64"),
             r: R.Tensor((3, 4), dtype="int32"), u: R.Tensor((3, 4), dtype="float32")):
        with R.dataflow():
            a = R.take(x, i, axis=1, mode="fast")
            b = R.scatter_elements(x, r, u, axis=0, reduction="add")
            c = R.index_put(x, (i, i), R.const(1.0, "float32"), accumulate=False)
            gv = (a, b, c)
            R.output(gv)
        return gv
'''


@pytest.fixture(scope="module")
def machine():
    return VirtualMachine(build(parse(MODULE), "llvm"), "cpu")


def test_compiled_kernels_check_their_indices(machine):
    rows = ROWS.astype("int32")
    a, b, c = machine["main"](X, np.array([-1, 2], "int64"), rows, U)
    np.testing.assert_array_equal(a, X[:, [3, 2]])
    added = X.copy()
    np.add.at(added, (rows, np.arange(4)[None, :].repeat(3, 0)), U)
    np.testing.assert_array_equal(b, added)
    expected = X.copy()
    expected[[-1, 2], [-1, 2]] = 1
    np.testing.assert_array_equal(c, expected)
    with pytest.raises(Exception, match=r"index 2147483647 out of range \[-4, 4\) in R\.take"):
        machine["main"](X, np.array([0, 2**31 - 1], "int64"), rows, U)
    with pytest.raises(Exception, match=r"index -4 out of range \[-3, 3\) in R\.scatter_elements"):
        machine["main"](X, np.array([0, 1], "int64"), np.where(rows == 2, -4, rows).astype("int32"), U)
