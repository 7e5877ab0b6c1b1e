"""Operators of math_ext, creation_ext, quantize and tensor_ext compiled through the
whole CPU pipeline (LLVM kernels), written as TVM 0.27 prints them, against numpy."""

import numpy as np

from relax.build import build
from relax.script import parse
from relax.vm import VirtualMachine

SOURCE = '''
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), v: R.Tensor((3,), dtype="float32"), x4: R.Tensor((1, 8, 2, 3), dtype="float32")):
        with R.dataflow():
            a = R.atan2(R.acos(R.multiply(x, R.const(0.1, "float32"))), R.cosh(v))
            b = R.nn.prelu(R.log_add_exp(x, v), v, axis=1)
            c = R.add(R.outer(v, v), R.eye(3, 3, 1, dtype="float32"))
            s = R.size(x4)
            h = R.hamming_window(4, 1, T.float64(0.54000000000000004), T.float64(0.46000000000000002), dtype="float32")
            g = R.meshgrid((v, h), indexing="xy")
            q = R.quantize(x, R.const(0.5, "float32"), R.const(1, "int8"), out_dtype="int8", axis=1)
            d = R.dequantize(q, R.const(0.5, "float32"), R.const(1, "int8"), out_dtype="float32", axis=1)
            m = R.median(x, axis=[1], keepdims=False)
            k = R.bucketize(x, v, out_int32=False, right=False)
            p = R.nn.pixel_shuffle(x4, upscale_factor=2)
            f = R.collapse_sum_like(R.nn.batch_flatten(x4), R.ones(R.shape([1, 48]), dtype="float32"))
            gv = (a, b, c, s, g, d, m, k, p, f)
            R.output(gv)
        return gv
'''


def test_extra_ops_compile_and_run():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3)).astype("float32")
    v = np.sort(rng.normal(size=3)).astype("float32")
    x4 = rng.normal(size=(1, 8, 2, 3)).astype("float32")
    vm = VirtualMachine(build(parse(SOURCE), opt_level=2), "cpu")
    a, b, c, s, (g0, g1), d, (mv, mi), k, p, f = vm["main"](x, v, x4)
    np.testing.assert_allclose(a, np.arctan2(np.arccos(x * np.float32(0.1)), np.cosh(v)), rtol=1e-5)
    lae = np.logaddexp(x, v)
    np.testing.assert_allclose(b, np.where(lae > 0, lae, lae * v), rtol=1e-5)
    np.testing.assert_allclose(c, np.outer(v, v) + np.eye(3, k=1), rtol=1e-6)
    assert int(s) == 48
    h = np.hamming(5)[:4].astype("float32")
    expected_g = np.meshgrid(v, h, indexing="xy")
    np.testing.assert_allclose(g0, expected_g[0])
    np.testing.assert_allclose(g1, expected_g[1], rtol=1e-6)
    quantized = np.clip(np.round(x / 0.5) + 1, -128, 127)
    np.testing.assert_array_equal(d, (quantized - 1) * 0.5)
    np.testing.assert_array_equal(mi, np.argsort(x, axis=1, kind="stable")[:, 1])
    np.testing.assert_array_equal(mv, np.sort(x, axis=1)[:, 1])
    np.testing.assert_array_equal(k, np.searchsorted(v, x))
    np.testing.assert_array_equal(p, x4.reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6))
    np.testing.assert_allclose(f, x4.reshape(1, 48), rtol=1e-6)
