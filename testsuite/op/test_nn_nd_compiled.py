"""The 1-D and 3-D convolutions and pools through the whole compiler: a module
written as TVM prints it is parsed, built for the host at -O2 (fusion and the CPU
schedules, so LLVM code generation sees every kernel) and run on the VM, each result
checked against the numpy references of test_nn_conv_pool_nd.py (float32, rtol 1e-4,
atol 1e-5)."""

import numpy as np

import nd_reference as reference
from relax.build import build
from relax.script import parse
from relax.vm import VirtualMachine
from test_nn_conv_numeric import conv_reference

MODULE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4, 3), dtype="float32"), w: R.Tensor((3, 2, 2, 2, 2), dtype="float32"),
             x1: R.Tensor((1, 2, 6), dtype="float32"), wt: R.Tensor((2, 3, 3), dtype="float32")):
        with R.dataflow():
            a = R.nn.conv3d(x, w, strides=[1, 1, 1], padding=[1, 1, 1, 1, 1, 1], dilation=[1, 1, 1], groups=1, data_layout="NCDHW", kernel_layout="OIDHW", out_layout="NCDHW", out_dtype=None)
            b = R.nn.relu(a)
            c = R.nn.max_pool3d(b, pool_size=[2, 2, 2], strides=[2, 2, 2], dilation=[1, 1, 1], padding=[0, 0, 0, 0, 0, 0], ceil_mode=True, count_include_pad=False, layout="NCDHW", out_layout="NCDHW")
            d = R.nn.avg_pool1d(x1, pool_size=[3], strides=[1], dilation=[1], padding=[1, 1], ceil_mode=False, count_include_pad=True, layout="NCW", out_layout="NCW")
            e = R.nn.conv1d_transpose(x1, wt, strides=[2], padding=[1, 1], output_padding=[1], dilation=[1], groups=1, data_layout="NCW", kernel_layout="IOW", out_layout="NCW", out_dtype=None)
            f = R.nn.adaptive_avg_pool3d(x, output_size=[2, 3, 2], layout="NCDHW", out_layout="NCDHW")
            gv = (c, d, e, f)
            R.output(gv)
        return gv
'''

SHAPES = {"x": (1, 2, 4, 4, 3), "w": (3, 2, 2, 2, 2), "x1": (1, 2, 6), "wt": (2, 3, 3)}


def test_nd_module_compiles_and_matches_numpy():
    rng = np.random.default_rng(41)
    a = {name: rng.standard_normal(shape).astype("float32") for name, shape in SHAPES.items()}
    vm = VirtualMachine(build(parse(MODULE), "llvm", 2), "cpu")
    got = [np.asarray(value) for value in vm["main"](*a.values())]
    convolved = np.maximum(conv_reference(a["x"], a["w"], (1, 1, 1), (1,) * 6, (1, 1, 1), 1), 0)
    expected = [
        reference.pool(convolved, "max", (2, 2, 2), (2, 2, 2), (1, 1, 1), (0,) * 6, ceil_mode=True),
        reference.pool(a["x1"], "avg", (3,), (1,), (1,), (1, 1), count_include_pad=True),
        reference.conv_transpose(a["x1"], a["wt"], (2,), (1, 1), (1,), (1,)),
        reference.adaptive_avg_pool(a["x"], (2, 3, 2)),
    ]
    for index, (value, want) in enumerate(zip(got, expected)):
        assert value.shape == want.shape, f"result {index}"
        np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-5, err_msg=f"result {index}")
