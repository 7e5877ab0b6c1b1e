"""gather_nd, scatter_nd, index_tensor, index_put, slice_scatter, reverse_sequence,
instance_norm, nll_loss and cross_entropy_with_logits through the whole compiler: a
module written as TVM prints it is parsed, built for the host (LLVM, -O2, so the
kernels are also fused) and run on the VM; every result is checked against the numpy
references of the operator tests (float32, rtol 1e-4, atol 1e-5)."""

import numpy as np

from relax.build import build
from relax.script import parse
from relax.vm import VirtualMachine
from test_indexing_nd import gather_nd_reference
from test_nn_loss import instance_norm_reference, nll_loss_reference
from test_slice_update import reverse_sequence_reference

MODULE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), dtype="float32"), i: R.Tensor((5, 2), dtype="int64"),
             u: R.Tensor((5, 4), dtype="float32"), i1: R.Tensor((3,), dtype="int64"),
             i2: R.Tensor((3, 1), dtype="int32"), s: R.Tensor((2, 2, 4), dtype="float32"),
             sl: R.Tensor((2,), dtype="int64"), g: R.Tensor((3,), dtype="float32"),
             t: R.Tensor((2, 4), dtype="int64"), y: R.Tensor((2, 3, 4), dtype="float32")):
        with R.dataflow():
            a = R.gather_nd(x, i, batch_dims=0)
            b = R.scatter_nd(x, i, u, reduction="add")
            c = R.index_tensor(x, (i1, i2))
            d = R.index_put(x, (i1, i1, i1), g, accumulate=True)
            e = R.slice_scatter(x, s, 0, 3, 2, axis=1)
            f = R.reverse_sequence(x, sl, seq_axis=1, batch_axis=0)
            h = R.nn.instance_norm(x, g, g, channel_axis=1, axes=[2], epsilon=1.0000000000000001e-05, center=True, scale=True)
            k = R.nn.nll_loss(x, t, g, reduction="mean", ignore_index=-100)
            m = R.nn.nll_loss(x, t, reduction="none", ignore_index=-100)
            n = R.nn.cross_entropy_with_logits(x, y)
            gv = (a, b, c, d, e, f, h, k, m, n)
            R.output(gv)
        return gv
'''


def expected_outputs(x, i, u, i1, i2, s, sl, g, t, y):
    scattered = x.copy()
    for row, update in zip(i, u):
        scattered[tuple(row)] += update
    put = x.copy()
    np.add.at(put, (i1, i1, i1), g)
    sliced = x.copy()
    sliced[:, 0:3:2] = s
    return [
        gather_nd_reference(x, i), scattered, x[i1, i2], put, sliced,
        reverse_sequence_reference(x, sl, 1, 0), instance_norm_reference(x, g, g, 1, [2]),
        nll_loss_reference(x, t, g), nll_loss_reference(x, t, reduction="none"),
        np.float32(-(x * y).sum() / 2),
    ]


def test_module_compiles_and_matches_numpy():
    rng = np.random.default_rng(5)
    inputs = {
        "x": rng.standard_normal((2, 3, 4)).astype("float32"),
        "i": np.array([[0, 1], [1, 2], [0, 1], [1, 0], [0, 0]], "int64"),
        "u": rng.standard_normal((5, 4)).astype("float32"),
        "i1": np.array([0, 1, 0], "int64"),
        "i2": np.array([[2], [0], [1]], "int32"),
        "s": rng.standard_normal((2, 2, 4)).astype("float32"),
        "sl": np.array([3, 2], "int64"),
        "g": np.abs(rng.standard_normal(3)).astype("float32") + 0.5,
        "t": np.array([[0, 2, -100, 1], [1, 1, 0, 2]], "int64"),
        "y": rng.standard_normal((2, 3, 4)).astype("float32"),
    }
    vm = VirtualMachine(build(parse(MODULE), "llvm", 2), "cpu")
    got = [np.asarray(value) for value in vm["main"](*inputs.values())]
    expected = expected_outputs(**inputs)
    assert len(got) == len(expected)
    for index, (value, reference) in enumerate(zip(got, expected)):
        assert value.shape == np.shape(reference), f"result {index}"
        np.testing.assert_allclose(value, reference, rtol=1e-4, atol=1e-5, err_msg=f"result {index}")
