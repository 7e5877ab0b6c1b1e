"""sort, argsort, topk, unique and nonzero through the whole pipeline against numpy."""

import numpy as np
import pytest

from relax.build import build
from relax.script import parse
from relax.vm import VirtualMachine

SOURCE = '''
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 5), dtype="float32")):
        with R.dataflow():
            s = R.sort(x, axis=1, descending=True)
            a = R.argsort(x, axis=0, descending=False, dtype="int64")
            t = R.topk(x, k=2, axis=-1, ret_type="both", largest=True, dtype="int32")
            u = R.unique(x, sorted=True, return_index=False, return_inverse=False, return_counts=True, axis=None)
            nz = R.nonzero(R.greater(x, R.const(0.5, "float32")))
            gv = (s, a, t, u, nz)
            R.output(gv)
        return gv
'''


@pytest.mark.parametrize("opt_level", [0, 2])
def test_sorting_and_data_dependent_shapes(opt_level):
    x = np.random.default_rng(0).integers(0, 4, (3, 5)).astype("float32")
    vm = VirtualMachine(build(parse(SOURCE), opt_level=opt_level), "cpu")
    s, a, (values, indices), (unique_values, counts), nz = vm["main"](x)
    np.testing.assert_array_equal(s, -np.sort(-x, axis=1))
    np.testing.assert_array_equal(a, np.argsort(x, axis=0, kind="stable"))
    assert a.dtype == np.int64 and indices.dtype == np.int32
    order = np.argsort(-x, axis=-1, kind="stable")[:, :2]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, -1))
    expected_values, expected_counts = np.unique(x, return_counts=True)
    np.testing.assert_array_equal(unique_values, expected_values)
    np.testing.assert_array_equal(counts, expected_counts)
    np.testing.assert_array_equal(nz, np.stack(np.nonzero(x > 0.5)))


def test_topk_checks_k():
    from relax.diagnostics import DiagnosticError

    text = SOURCE.replace("k=2", "k=9")
    with pytest.raises(DiagnosticError, match="k=9 is outside 1..5"):
        build(parse(text))


EFFECTS = '''
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((6,), dtype="float32"), begin: R.Tensor((1,), dtype="int64"), end: R.Tensor((1,), dtype="int64"), step: R.Tensor((1,), dtype="int64")):
        s = R.dynamic_strided_slice(x, begin, end, step)
        t = R.shape_to_tensor(R.shape([2, 3]))
        R.print(x, format=R.str("x = {}"))
        R.assert_op(R.const(True, "bool"), format=R.str("never"))
        return (s, t)
'''


def test_effects_and_runtime_slices(capfd):
    x = np.arange(6, dtype="float32")
    vm = VirtualMachine(build(parse(EFFECTS)), "cpu")
    s, t = vm["main"](x, np.array([1]), np.array([6]), np.array([2]))
    np.testing.assert_array_equal(s, x[1:6:2])
    np.testing.assert_array_equal(t, np.array([2, 3]))
    assert "x = [0. 1. 2. 3. 4. 5.]" in capfd.readouterr().out


def test_assert_op_fails_the_run():
    text = EFFECTS.replace('R.const(True, "bool"), format=R.str("never")', 'R.const(False, "bool"), x, format=R.str("x is {}")')
    vm = VirtualMachine(build(parse(text)), "cpu")
    with pytest.raises(Exception, match=r"AssertionError: x is \[0\. 1\."):
        vm["main"](np.arange(6, dtype="float32"), np.array([0]), np.array([6]), np.array([1]))
