"""nn and image kernels legalized for symbolic sizes (n, h) agree with the same
operators legalized for the static sizes they are run at (n = 1, h = 5): exact up to
1e-6, the same arithmetic in both. The kernels take no extra size parameters: every
size comes from a buffer's shape."""

import numpy as np
import pytest

from numeric import run_op
from relax import ir
from relax.ir import tir
from relax.op.infer import bind_call
from relax.op.legalize_context import LegalizeContext
from relax.tir.interpreter import run

N, H = tir.Var("n", "int64"), tir.Var("h", "int64")
SIZES = {"n": 1, "h": 5}
RNG = np.random.default_rng(19)


def var(dims, name="x"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var(name, ir.TensorStructInfo(ir.ShapeExpr(dims), "float32"))


def size_shape(*values):
    return ir.ShapeExpr(tuple(tir.IntImm("int64", v) for v in values))


CASES = [
    ("nn.conv2d", [var((N, 2, H, H)), var((4, 2, 3, 3))], {"strides": 2, "padding": 1}),
    ("nn.conv2d_transpose", [var((N, 2, H, H)), var((2, 3, 3, 3))], {"strides": 2, "padding": 1, "output_padding": 1}),
    ("nn.max_pool2d", [var((N, 2, H, H))], {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True}),
    ("nn.avg_pool2d", [var((N, 2, H, H))], {"pool_size": 3, "strides": 2, "padding": 1}),
    ("nn.adaptive_avg_pool2d", [var((N, 2, H, H))], {"output_size": (2, 3)}),
    ("nn.pad", [var((N, 2, H))], {"pad_width": (0, 0, 1, 1, 2, 2), "pad_mode": "reflect"}),
    ("nn.batch_norm", [var((N, 2, H))] + [var((2,)) for _ in range(4)], {"axis": 1}),
    ("nn.group_norm", [var((N, 4, H)), var((4,)), var((4,))], {"num_groups": 2, "channel_axis": 1, "axes": (2,)}),
    ("nn.attention", [var((N, H, 2, 4)), var((N, 5, 2, 4)), var((N, 5, 2, 3))], {"causal_mask": "BottomRight"}),
    ("image.resize2d", [var((N, 2, H, H)), size_shape(7, 3)], {"method": "cubic"}),
]


def _concrete(info):
    return tuple(SIZES[d.name] if isinstance(d, tir.Var) else d.value for d in info.shape_values)


@pytest.mark.parametrize("op, args, attrs", CASES, ids=[case[0] for case in CASES])
def test_symbolic_kernel_matches_static_kernel(op, args, attrs):
    bound = bind_call(ir.Call(ir.Op(f"relax.{op}"), tuple(args), ir.FrozenDict(attrs)))
    context = LegalizeContext()
    legalized = bound.op.legalize(bound, context)
    assert len(legalized.args) == 2, "a symbolic size was passed as an extra kernel parameter"
    kernel = context.new_functions[legalized.args[0].name_hint]
    arrays = [RNG.standard_normal(_concrete(a.struct_info)).astype("float32") for a in args if isinstance(a, ir.Var)]
    shapes = [a for a in args if isinstance(a, ir.ShapeExpr)]
    expected = run_op(op, *arrays, *shapes, **attrs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    outputs = [np.zeros_like(e) for e in expected]
    run(kernel, *arrays, *outputs)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
