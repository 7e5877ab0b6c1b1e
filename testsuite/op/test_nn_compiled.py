"""The nn and image operators through the whole compiler: a module written as TVM
prints it is parsed, built for the host (relax.build, -O0 and -O2) and run on the VM,
and every result is checked against the numpy references of the operator tests
(float32, rtol 1e-4, atol 1e-5)."""

import numpy as np
import pytest

from relax.build import build
from relax.script import parse
from relax.vm import VirtualMachine
from test_image_resize import resize_reference
from test_nn_attention import attention_reference
from test_nn_conv_numeric import conv_reference, conv_transpose_reference
from test_nn_misc import numpy_pad_widths
from test_nn_norm import batch_norm_reference, group_norm_reference
from test_nn_pool_numeric import adaptive_reference, pool_reference

MODULE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 5, 5), dtype="float32"), w: R.Tensor((4, 2, 3, 3), dtype="float32"),
             x1: R.Tensor((1, 2, 7), dtype="float32"), w1: R.Tensor((3, 2, 3), dtype="float32"),
             wt: R.Tensor((2, 3, 3, 3), dtype="float32"), g: R.Tensor((2,), dtype="float32"),
             q: R.Tensor((1, 4, 2, 8), dtype="float32"), k: R.Tensor((1, 6, 2, 8), dtype="float32"),
             v: R.Tensor((1, 6, 2, 5), dtype="float32")):
        with R.dataflow():
            a = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            b = R.nn.conv1d(x1, w1, strides=[1], padding=[1, 0], dilation=[2], groups=1, data_layout="NCW", kernel_layout="OIW", out_layout="NCW", out_dtype=None)
            c = R.nn.conv2d_transpose(x, wt, strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="IOHW", out_layout="NCHW", out_dtype=None)
            d = R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], dilation=[1, 1], padding=[1, 1, 1, 1], ceil_mode=True, count_include_pad=False, layout="NCHW", out_layout="NCHW")
            e = R.nn.avg_pool2d(x, pool_size=[2, 2], strides=[2, 2], dilation=[1, 1], padding=[0, 0, 1, 1], ceil_mode=False, count_include_pad=True, layout="NCHW", out_layout="NCHW")
            f = R.nn.adaptive_avg_pool2d(x, output_size=[2, 3], layout="NCHW", out_layout="NCHW")
            h = R.nn.pad(x, pad_width=[0, 0, 0, 0, 1, 2, 2, 1], pad_value=0.5, pad_mode="constant")
            i = R.nn.dropout(x, rate=0.5)
            j = R.nn.batch_norm(x, g, g, g, g, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            l = R.nn.group_norm(x, g, g, num_groups=1, channel_axis=1, axes=[2, 3], epsilon=1.0000000000000001e-05, center=True, scale=True)
            m = R.nn.attention(q, k, v, scale=T.float32(0.5), causal_mask="TopLeft", window_size=None)
            n = R.image.resize2d(x, R.shape([7, 9]), roi=[T.float32(0.0), T.float32(0.0), T.float32(0.0), T.float32(0.0)], layout="NCHW", method="linear", coordinate_transformation_mode="half_pixel", rounding_method="round", cubic_alpha=-0.75, cubic_exclude=0, extrapolation_value=0.0, out_dtype=None)
            gv = (a, b, c, d, e, f, h, i, j, l, m, n)
            R.output(gv)
        return gv
'''

RNG = np.random.default_rng(23)
SHAPES = {"x": (1, 2, 5, 5), "w": (4, 2, 3, 3), "x1": (1, 2, 7), "w1": (3, 2, 3), "wt": (2, 3, 3, 3), "g": (2,),
          "q": (1, 4, 2, 8), "k": (1, 6, 2, 8), "v": (1, 6, 2, 5)}


def expected_outputs(a):
    x, g = a["x"], a["g"]
    return [
        conv_reference(x, a["w"], (2, 2), (1, 1, 1, 1), (1, 1), 1),
        conv_reference(a["x1"], a["w1"], (1,), (1, 0), (2,), 1),
        conv_transpose_reference(x, a["wt"], (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 1),
        pool_reference(x, "max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), ceil_mode=True),
        pool_reference(x, "avg", (2, 2), (2, 2), (1, 1), (0, 0, 1, 1), count_include_pad=True),
        adaptive_reference(x, 2, 3),
        np.pad(x, numpy_pad_widths((0, 0, 0, 0, 1, 2, 2, 1)), constant_values=0.5),
        x, np.ones_like(x),
        *batch_norm_reference(x, g, g, g, g, 1, training=False),
        group_norm_reference(x, g, g, 1, 1, [2, 3]),
        attention_reference(a["q"], a["k"], a["v"], scale=0.5, causal_mask="TopLeft"),
        resize_reference(x, (7, 9)),
    ]


def flatten(value, out):
    if isinstance(value, tuple):
        for item in value:
            flatten(item, out)
    else:
        out.append(np.asarray(value))
    return out


@pytest.mark.parametrize("opt_level", [0, 2])
def test_nn_module_compiles_and_matches_numpy(opt_level):
    arrays = {name: RNG.standard_normal(shape).astype("float32") for name, shape in SHAPES.items()}
    arrays["g"] = np.abs(arrays["g"]) + 0.5  # also the moving variance
    vm = VirtualMachine(build(parse(MODULE), "llvm", opt_level), "cpu")
    got = flatten(vm["main"](*arrays.values()), [])
    expected = expected_outputs(arrays)
    assert len(got) == len(expected)
    for index, (value, reference) in enumerate(zip(got, expected)):
        assert value.shape == reference.shape, f"result {index}"
        np.testing.assert_allclose(value, reference, rtol=1e-4, atol=1e-5, err_msg=f"result {index}")
