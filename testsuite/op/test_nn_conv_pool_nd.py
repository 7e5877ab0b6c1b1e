"""R.nn.conv3d, conv1d_transpose, conv3d_transpose and the 1-D / 3-D pools: their
struct-info inference and their legalized kernels against numpy references
(float32, rtol 1e-5, atol 1e-5). The expected values were also checked once against
TVM 0.27's LegalizeOps output for the same attributes."""

import numpy as np
import pytest

import nd_reference as reference
from numeric import run_op
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from test_nn_conv_numeric import conv_reference
from test_nn_pool_infer import dims, infer, tensor

RNG = np.random.default_rng(31)
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
D = tir.Var("d", "int64")


def normal(*shape):
    return RNG.standard_normal(shape).astype("float32")


def test_conv3d_grouped_strided_dilated():
    x, w = normal(1, 4, 4, 5, 3), normal(4, 2, 2, 3, 2)
    attrs = {"strides": (1, 2, 1), "padding": (1, 0, 1, 0, 1, 1), "dilation": (1, 1, 2), "groups": 2}
    expected = conv_reference(x, w, (1, 2, 1), (1, 0, 1, 0, 1, 1), (1, 1, 2), 2)
    np.testing.assert_allclose(run_op("nn.conv3d", x, w, **attrs), expected, **TOLERANCE)


def test_conv3d_channels_last():
    x, w = normal(1, 2, 3, 4, 3), normal(3, 2, 2, 2, 2)
    got = run_op("nn.conv3d", x.transpose(0, 2, 3, 4, 1), w.transpose(2, 3, 4, 1, 0), padding=1,
                 data_layout="NDHWC", kernel_layout="DHWIO")
    expected = conv_reference(x, w, (1, 1, 1), (1,) * 6, (1, 1, 1), 1)
    np.testing.assert_allclose(got, expected.transpose(0, 2, 3, 4, 1), **TOLERANCE)


def test_conv1d_transpose_grouped():
    x, w = normal(1, 4, 5), normal(4, 3, 3)
    got = run_op("nn.conv1d_transpose", x, w, strides=2, padding=(1, 2), output_padding=1, groups=2)
    expected = reference.conv_transpose(x, w, (2,), (1, 2), (1,), (1,), 2)
    assert got.shape == (1, 6, 9)
    np.testing.assert_allclose(got, expected, **TOLERANCE)


def test_conv3d_transpose():
    x, w = normal(1, 2, 3, 2, 3), normal(2, 3, 2, 2, 3)
    got = run_op("nn.conv3d_transpose", x, w, strides=(2, 1, 2), padding=(1, 0, 0, 0, 1, 1), output_padding=(1, 0, 0),
                 dilation=(1, 2, 1))
    expected = reference.conv_transpose(x, w, (2, 1, 2), (1, 0, 0, 0, 1, 1), (1, 0, 0), (1, 2, 1))
    assert got.shape == (1, 3, 6, 3, 6)
    np.testing.assert_allclose(got, expected, **TOLERANCE)


def test_conv_nd_inference():
    info = infer("nn.conv3d", tensor((1, 2, D, 6, 5)), tensor((4, 2, 3, 3, 3)), padding=1, strides=2)
    depth, *rest = dims(info)[2:]
    assert dims(info)[:2] == [1, 4] and rest == [3, 3]
    assert isinstance(depth, tir.PrimExpr) and not isinstance(depth, tir.IntImm)
    assert dims(infer("nn.conv1d_transpose", tensor((1, 4, 5)), tensor((4, 3, 3)), strides=2, groups=2)) == [1, 6, 11]
    assert dims(infer("nn.conv3d_transpose", tensor((1, 2, 3, 3, 3)), tensor((2, 3, 2, 2, 2)))) == [1, 3, 4, 4, 4]


@pytest.mark.parametrize("op, args, attrs, message", [
    ("nn.conv3d", ((1, 2, 4, 4), (3, 2, 2, 2, 2)), {}, "data must have rank 5, got rank 4 in R.nn.conv3d"),
    ("nn.conv3d", ((1, 2, 4, 4, 4), (3, 4, 2, 2, 2)), {}, "data has 2 channels but the weight expects 4"),
    ("nn.conv3d_transpose", ((1, 3, 3, 3, 2), (2, 3, 2, 2, 2)), {"data_layout": "NDHWC"},
     "only NCDHW data with IODHW kernels is supported in R.nn.conv3d_transpose"),
    ("nn.conv1d_transpose", ((1, 2, 5), (2, 3, 3)), {"kernel_layout": "OIW"}, "only NCW data with IOW kernels"),
    ("nn.max_pool3d", ((1, 2, 4, 4),), {}, "data must have rank 5, got rank 4 in R.nn.max_pool3d"),
    ("nn.avg_pool1d", ((1, 2, 4),), {"pool_size": (2, 2)}, "expected 1 values, got 2"),
    ("nn.adaptive_avg_pool3d", ((1, 2, 4, 4, 4),), {"layout": "NCHW"}, "expected a permutation of 'NCDHW'"),
])
def test_nd_errors(op, args, attrs, message):
    with pytest.raises(DiagnosticError, match=message):
        infer(op, *(tensor(shape) for shape in args), **attrs)


def test_conv3d_dtype_mismatch():
    with pytest.raises(DiagnosticError, match="data type float32 and weight type float16 differ"):
        infer("nn.conv3d", tensor((1, 2, 3, 3, 3)), tensor((2, 2, 1, 1, 1), "float16"))


def test_pool_nd_inference():
    assert dims(infer("nn.max_pool1d", tensor((1, 7, 2)), pool_size=3, strides=2, layout="NWC")) == [1, 3, 2]
    info = infer("nn.avg_pool3d", tensor((1, 2, D, 5, 3)), pool_size=2, ceil_mode=True, strides=2)
    assert dims(info)[:2] == [1, 2] and dims(info)[3:] == [3, 2]
    assert dims(infer("nn.adaptive_avg_pool3d", tensor((1, 5, 4, 3, 2)), output_size=2, layout="NDHWC")) == [1, 2, 2,
                                                                                                              2, 2]
    assert dims(infer("nn.adaptive_avg_pool1d", tensor((1, 2, D)), output_size=3)) == [1, 2, 3]


@pytest.mark.parametrize("op, shape, attrs, normal_form", [
    # avg_pool1d and avg_pool3d count the padding by default, as TVM's Python API does.
    ("avg_pool1d", (1, 2, 7), {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True},
     ((3,), (2,), (1,), (1, 1), True, True)),
    ("avg_pool1d", (1, 2, 7), {"pool_size": 3, "strides": 2, "padding": (1, 2), "count_include_pad": False},
     ((3,), (2,), (1,), (1, 2), False, False)),
    ("max_pool3d", (1, 2, 4, 5, 3), {"pool_size": (2, 3, 2), "strides": (2, 1, 1), "padding": (1, 1, 0, 0, 1, 1),
                                     "dilation": (1, 1, 2)},
     ((2, 3, 2), (2, 1, 1), (1, 1, 2), (1, 1, 0, 0, 1, 1), False, True)),
    ("avg_pool3d", (1, 2, 4, 5, 3), {"pool_size": (2, 3, 2), "strides": (2, 1, 1), "padding": (1, 1, 0, 0, 1, 1),
                                     "ceil_mode": True},
     ((2, 3, 2), (2, 1, 1), (1, 1, 1), (1, 1, 0, 0, 1, 1), True, True)),
])
def test_pool_nd(op, shape, attrs, normal_form):
    x = normal(*shape)
    expected = reference.pool(x, op[:3], *normal_form)
    np.testing.assert_allclose(run_op(f"nn.{op}", x, **attrs), expected, **TOLERANCE)


def test_max_pool1d_channels_last():
    x = normal(1, 2, 6)
    got = run_op("nn.max_pool1d", x.transpose(0, 2, 1), pool_size=2, strides=2, layout="NWC")
    np.testing.assert_allclose(got, reference.pool(x, "max", (2,), (2,), (1,), (0, 0)).transpose(0, 2, 1), **TOLERANCE)


def test_adaptive_avg_pool_nd():
    x1, x3 = normal(1, 2, 7), normal(1, 2, 5, 4, 3)
    np.testing.assert_allclose(run_op("nn.adaptive_avg_pool1d", x1, output_size=3),
                               reference.adaptive_avg_pool(x1, (3,)), **TOLERANCE)
    got = run_op("nn.adaptive_avg_pool3d", x3.transpose(0, 2, 3, 4, 1), output_size=(3, 2, 2), layout="NDHWC")
    np.testing.assert_allclose(got, reference.adaptive_avg_pool(x3, (3, 2, 2)).transpose(0, 2, 3, 4, 1), **TOLERANCE)
