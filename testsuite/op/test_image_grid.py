"""R.image.affine_grid and R.image.grid_sample: inference (TVM 0.27's shapes, dtypes
and errors), the legalized kernels against the numpy references below (float32,
rtol 1e-5, atol 1e-5) and one module through the whole compiler (-O2, llvm, VM).

The references follow the operators' definitions point by point in float64: an
affine map of the normalized target points, and a read of the image at each grid
point (unnormalize, pad by clamping or mirroring, then nearest, bilinear or Keys'
bicubic with alpha -0.75)."""

import itertools

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

RNG = np.random.default_rng(47)


def shape(*values):
    return ir.ShapeExpr(tuple(tir.IntImm("int64", v) if isinstance(v, int) else v for v in values))


# ---------------------------------------------------------------------------
# numpy references


def affine_grid_reference(theta, size, align_corners):
    if align_corners:
        axes = [-1 + np.arange(s) * ((2 - 1e-7) / (s - 1)) for s in size]
    else:
        axes = [(2 * np.arange(s) + 1) / s - 1 for s in size]
    points = np.meshgrid(*axes, indexing="ij")  # (D,) H, W
    columns = points[::-1]  # x, y (, z): matrix column j multiplies axis rank - 1 - j
    out = theta[:, :, -1].astype("float64")[(...,) + (None,) * len(size)]
    for j, column in enumerate(columns):
        out = out + theta[:, :, j, None, None, *([None] if len(size) == 3 else [])] * column
    return out


def _reflect(x, size, align_corners):
    span, corner = (size - 1, 0.0) if align_corners else (size, -0.5)
    if corner <= x <= span + corner:
        return x
    distance = abs(corner - x)
    crossed = int(distance) // max(span, 1)
    extra = distance - crossed * span
    return extra + corner if crossed % 2 == 0 else span - extra + corner


def _pad(x, size, mode, align_corners):
    if mode == "reflection":
        x = _reflect(x, size, align_corners)
    return x if mode == "zeros" else min(max(x, 0.0), size - 1)


def _keys(distance, a=-0.75):
    d = abs(distance)
    return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1 if d <= 1 else a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a


def _sample(image, position, method, mode, align_corners):
    """One channel's value at a pixel position (one float per axis)."""
    sizes = image.shape

    def read(index):
        inside = all(0 <= i < s for i, s in zip(index, sizes))
        return image[tuple(index)] if inside else 0.0

    if method == "nearest":
        return read([int(np.rint(_pad(p, s, mode, align_corners))) for p, s in zip(position, sizes)])
    if method == "bilinear":
        position = [_pad(p, s, mode, align_corners) for p, s in zip(position, sizes)]
        taps = [[(int(np.floor(p)) + o, 1 - abs(p - np.floor(p) - o)) for o in (0, 1)] for p in position]
    else:
        taps = [[(int(np.floor(p)) + o, _keys(p - np.floor(p) - o)) for o in (-1, 0, 1, 2)] for p in position]
        taps = [[(i if mode == "zeros" else int(_pad(float(i), s, mode, align_corners)), w) for i, w in axis]
                for axis, s in zip(taps, sizes)]
    return sum(np.prod([w for _, w in combo]) * read([i for i, _ in combo]) for combo in itertools.product(*taps))


def grid_sample_reference(data, grid, method, mode, align_corners):
    rank = data.ndim - 2
    out = np.zeros(data.shape[:2] + grid.shape[2:])
    for n, c, *point in itertools.product(*(range(d) for d in out.shape)):
        position = []
        for axis, size in enumerate(data.shape[2:]):
            g = float(grid[(n, rank - 1 - axis, *point)])
            position.append((g + 1) * (size - 1) / 2 if align_corners else (g + 1) * size / 2 - 0.5)
        out[(n, c, *point)] = _sample(data[n, c], position, method, mode, align_corners)
    return out.astype(data.dtype)


# ---------------------------------------------------------------------------
# numbers


@pytest.mark.parametrize("size, align_corners", [((3, 4), True), ((3, 4), False), ((2, 3, 2), False)])
def test_affine_grid(size, align_corners):
    rank = len(size)
    theta = RNG.standard_normal((2, rank, rank + 1)).astype("float32")
    got = run_op("image.affine_grid", theta, shape(*size), align_corners=align_corners)
    np.testing.assert_allclose(got, affine_grid_reference(theta, size, align_corners), rtol=1e-5, atol=1e-5)


DATA = RNG.standard_normal((1, 2, 4, 5)).astype("float32")
GRID = RNG.uniform(-1.6, 1.6, (1, 2, 2, 3)).astype("float32")  # reaches outside the image


@pytest.mark.parametrize("method, mode, align_corners", [
    ("bilinear", "zeros", False),
    ("bilinear", "border", True),
    ("bilinear", "reflection", False),
    ("nearest", "reflection", True),
    ("nearest", "zeros", False),
    ("bicubic", "zeros", False),
    ("bicubic", "border", True),
    ("bicubic", "reflection", False),
    ("bicubic", "reflection", True),
])
def test_grid_sample_2d(method, mode, align_corners):
    got = run_op("image.grid_sample", DATA, GRID, method=method, padding_mode=mode, align_corners=align_corners)
    expected = grid_sample_reference(DATA, GRID, method, mode, align_corners)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method, mode, align_corners", [("bilinear", "reflection", False), ("nearest", "border", True)])
def test_grid_sample_3d(method, mode, align_corners):
    data = RNG.standard_normal((1, 1, 3, 4, 3)).astype("float32")
    grid = RNG.uniform(-1.5, 1.5, (1, 3, 2, 2, 3)).astype("float32")
    got = run_op("image.grid_sample", data, grid, method=method, layout="NCDHW", padding_mode=mode,
                 align_corners=align_corners)
    np.testing.assert_allclose(got, grid_sample_reference(data, grid, method, mode, align_corners),
                               rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# inference


def infer(name, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.image.{name}"), args, ir.FrozenDict(attrs)))


def tensor(dims, dtype="float32", ndim=-1):
    if dims is None:
        return ir.Var("x", ir.TensorStructInfo(None, dtype, ndim))
    return ir.Var("x", ir.TensorStructInfo(shape(*dims), dtype))


def dims_of(info):
    return [d.value if isinstance(d, tir.IntImm) else d.name for d in info.shape_values]


def test_affine_grid_inference():
    n, h = tir.Var("n", "int64"), tir.Var("h", "int64")
    info = infer("affine_grid", tensor((n, 2, 3), "float16"), shape(h, 5))
    assert dims_of(info) == ["n", 2, "h", 5] and info.dtype == "float16"
    assert dims_of(infer("affine_grid", tensor((2, 3, 4)), shape(3, 4, 5))) == [2, 3, 3, 4, 5]
    assert dims_of(infer("affine_grid", tensor((2, 2, 3)), ir.PrimValue(tir.IntImm("int64", 4)))) == [2, 2, 4, 4]
    assert infer("affine_grid", tensor(None), shape(3, 4, 5)).ndim == 5
    with pytest.raises(DiagnosticError, match="size must give 2 or 3 values .* got 4 in R.image.affine_grid"):
        infer("affine_grid", tensor((2, 2, 3)), shape(4, 5, 6, 7))
    with pytest.raises(DiagnosticError, match=r"a 3-D grid needs matrices of shape \(batch, 3, 4\), got 2 at axis 1"):
        infer("affine_grid", tensor((2, 2, 3)), shape(4, 5, 6))
    with pytest.raises(DiagnosticError, match="data must be affine matrices of rank 3"):
        infer("affine_grid", tensor((2, 3)), shape(4, 5))


def test_grid_sample_inference():
    n, h = tir.Var("n", "int64"), tir.Var("h", "int64")
    info = infer("grid_sample", tensor((n, 3, h, 9), "float16"), tensor((n, 2, h, 5)))
    assert dims_of(info) == ["n", 3, "h", 5] and info.dtype == "float16"
    assert dims_of(infer("grid_sample", tensor((2, 8, 9, 3)), tensor((2, 2, 4, 5)), layout="NHWC")) == [2, 4, 5, 3]
    assert dims_of(infer("grid_sample", tensor((2, 3, 6, 8, 9)), tensor((2, 3, 4, 5, 6)),
                         layout="NCDHW")) == [2, 3, 4, 5, 6]
    assert infer("grid_sample", tensor(None), tensor((2, 2, 4, 5))).ndim == 4
    with pytest.raises(DiagnosticError, match="data must have rank 4 for layout NCHW, got rank 5"):
        infer("grid_sample", tensor((2, 3, 6, 8, 9)), tensor((2, 3, 4, 5, 6)))
    with pytest.raises(DiagnosticError, match="expected one of 'nearest', 'bilinear', 'bicubic'"):
        infer("grid_sample", tensor((2, 3, 8, 9)), tensor((2, 2, 4, 5)), method="linear")
    with pytest.raises(DiagnosticError, match="expected an order of the letters NCHW or NCDHW"):
        infer("grid_sample", tensor((2, 3, 8, 9)), tensor((2, 2, 4, 5)), layout="NCW")


@pytest.mark.parametrize("attrs, message", [
    ({"method": "bicubic", "layout": "NCDHW"}, "bicubic grid sampling is 2-D only"),
    ({"layout": "NHWC"}, "lowered only for layouts NCHW and NCDHW, got NHWC"),
])
def test_grid_sample_kernel_errors(attrs, message):
    rank = len(attrs["layout"]) - 2
    data, grid = np.zeros((1, 1) + (3,) * rank, "float32"), np.zeros((1, rank) + (2,) * rank, "float32")
    with pytest.raises(DiagnosticError, match=message):
        run_op("image.grid_sample", data, grid, **attrs)


# ---------------------------------------------------------------------------
# through the compiler

MODULE = '''
@I.ir_module
class Module:
    @R.function
    def main(theta: R.Tensor((1, 2, 3), dtype="float32"), x: R.Tensor((1, 2, 4, 5), dtype="float32")):
        with R.dataflow():
            g = R.image.affine_grid(theta, R.shape([3, 4]), align_corners=False)
            y = R.image.grid_sample(x, g, method="bilinear", layout="NCHW", padding_mode="reflection", align_corners=False)
            z = R.image.grid_sample(x, g, method="bicubic", layout="NCHW", padding_mode="border", align_corners=True)
            gv = (y, z)
            R.output(gv)
        return gv
'''


def test_grid_module_compiles_and_matches_numpy():
    theta = (np.array([[[1.1, 0.3, 0.2], [-0.2, 0.9, -0.1]]]) + RNG.uniform(-0.1, 0.1, (1, 2, 3))).astype("float32")
    vm = VirtualMachine(build(parse(MODULE), "llvm", 2), "cpu")
    y, z = (np.asarray(value) for value in vm["main"](theta, DATA))
    grid = affine_grid_reference(theta, (3, 4), False)
    np.testing.assert_allclose(y, grid_sample_reference(DATA, grid, "bilinear", "reflection", False), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(z, grid_sample_reference(DATA, grid, "bicubic", "border", True), rtol=1e-4, atol=1e-5)
