"""Sampling grids: R.image.affine_grid(data, size) and R.image.grid_sample(data, grid),
as TVM 0.27's topi computes them (the spatial transformer pair).

affine_grid turns a batch of affine matrices, (N, 2, 3) in 2-D or (N, 3, 4) in 3-D,
into a grid of normalized source coordinates laid out (N, 2, H, W) or (N, 3, D, H, W):
channel 0 holds x (the width coordinate), 1 holds y, 2 holds z. The target points
run over [-1, 1] (align_corners) or over the pixel centres (2 i + 1) / size - 1.

grid_sample reads data (NCHW or NCDHW) at such a grid: a coordinate g maps to the
pixel position (g + 1) (size - 1) / 2 (align_corners) or (g + 1) size / 2 - 0.5.
padding_mode decides what lies outside the image: "zeros" reads 0, "border" clamps
the position into the image, "reflection" mirrors it at the image's edges (at the
corner pixels' centres with align_corners, else half a pixel beyond them). "nearest"
rounds the position half to even, "bilinear" blends the 2x2 (2x2x2) neighbours and
"bicubic" (2-D only) the 4x4 with Keys' spline (alpha -0.75); bicubic clamps or
mirrors each neighbour's index rather than the position. Coordinates are computed in
float32, as for resize (image.py, whose cubic weights this module shares).
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import ShapeStructInfo, TensorStructInfo
from . import te
from .image import FLOAT, _as_float, _call, _cubic_weights, _f, _one_of, _weighted_sum
from .infer import literal_of
from .nn_window import if_then_else, in_bounds
from .registry import AttrSpec, OpDef, register
from .shape import int64, make_tensor_info, static_value, tensor_info

METHODS = ("nearest", "bilinear", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")
KERNEL_LAYOUTS = ("NCHW", "NCDHW")  # the layouts topi computes; inference takes any order of the letters
SPATIAL = {2: "HW", 3: "DHW"}
CUBIC_ALPHA = -0.75  # PyTorch's choice, which topi follows


# ---------------------------------------------------------------------------
# affine_grid


def _target_size(call) -> tuple[tuple | None, int]:
    """The target spatial dims of affine_grid (None when not literal) and their count
    (-1 when unknown). One value means a square 2-D target, as TVM's Python API reads it."""
    arg, info = call.args[1], call.arg_info[1]
    if isinstance(arg, (rx.ShapeExpr, rx.Tuple, rx.PrimValue)):
        value = tuple(arg.values) if isinstance(arg, rx.ShapeExpr) else literal_of(arg)
        dims = tuple(int64(v) if isinstance(v, int) else v for v in (value if isinstance(value, tuple) else (value,)))
        dims = dims * 2 if len(dims) == 1 else dims
        return dims, len(dims)
    # A shape variable: TVM reads only its rank, even when its values are known.
    return None, info.ndim if isinstance(info, ShapeStructInfo) else -1


def _check_affine_matrix(call, data: TensorStructInfo, rank: int) -> None:
    if data.ndim >= 0 and data.ndim != 3:
        raise call.error(f"data must be affine matrices of rank 3 (batch, {rank}, {rank + 1}), got rank {data.ndim}")
    if data.shape_values is None or rank < 0:
        return
    for axis, expected in ((1, rank), (2, rank + 1)):
        value = static_value(data.shape_values[axis])
        if value is not None and value != expected:
            raise call.error(f"a {rank}-D grid needs matrices of shape (batch, {rank}, {rank + 1}), "
                             f"got {value} at axis {axis}")


def affine_grid_infer(call) -> TensorStructInfo:
    data = tensor_info(call, 0)
    dims, rank = _target_size(call)
    if rank >= 0 and rank not in (2, 3):
        raise call.error(f"size must give 2 or 3 values ((height, width) or (depth, height, width)), got {rank}")
    _check_affine_matrix(call, data, rank)
    if rank < 0:
        return TensorStructInfo(None, data.dtype, -1)
    if dims is None or data.shape_values is None:
        return TensorStructInfo(None, data.dtype, rank + 2)
    for value in dims:
        if static_value(value) is not None and static_value(value) < 1:
            raise call.error(f"size must be positive, got {static_value(value)}")
    return make_tensor_info((data.shape_values[0], int64(rank), *dims), data.dtype)


def _affine_grid_compute(data: te.Tensor, sizes: tuple[int, ...], align_corners: bool) -> te.Tensor:
    """Point i of a target axis of size s sits at start + i * step; the matrix's
    columns run x, y (, z) while the axes run (D,) H, W, hence the reversed column."""
    dtype, rank = data.dtype, len(sizes)
    if align_corners:
        # topi's step stops just short of 2 / (s - 1), so that the last point stays below 1.
        starts, steps = [-1.0] * rank, [(2.0 - 1e-7) / (s - 1) for s in sizes]
    else:
        starts, steps = [-1.0 + 1.0 / s for s in sizes], [2.0 / s for s in sizes]

    def body(n, row, *position):
        value = data[n, row, int64(rank)]
        for axis, index in enumerate(position):
            point = tir.Add(tir.FloatImm(dtype, starts[axis]), tir.Mul(tir.Cast(dtype, index),
                                                                       tir.FloatImm(dtype, steps[axis])))
            value = tir.Add(value, tir.Mul(data[n, row, int64(rank - 1 - axis)], point))
        return value

    return te.compute((data.shape[0], int64(rank), *(int64(s) for s in sizes)), body, "affine_grid", dtype)


def affine_grid_legalize(call, context):
    info = affine_grid_infer(call)
    dims, _ = _target_size(call)
    sizes = None if dims is None else [static_value(d) for d in dims]
    if sizes is None or None in sizes:
        raise call.error("affine_grid needs a constant size to be lowered")
    if not dt.is_float(info.dtype):
        raise call.error(f"affine_grid needs floating-point matrices, got {info.dtype}")
    if call.attrs["align_corners"] and min(sizes) < 2:
        raise call.error("with align_corners every target size must be at least 2")
    return context.call_te(lambda data: _affine_grid_compute(data, tuple(sizes), call.attrs["align_corners"]),
                           call.args[:1], call.arg_info[:1], "affine_grid")


# ---------------------------------------------------------------------------
# grid_sample


def _layout_check(value) -> str | None:
    if isinstance(value, str) and sorted(value) in (sorted("NCHW"), sorted("NCDHW")):
        return None
    return "expected an order of the letters NCHW or NCDHW"


def grid_sample_infer(call) -> TensorStructInfo:
    """The output keeps data's N and C and takes its spatial dims from grid's axes 2 on
    (whatever the layout, as TVM 0.27 infers it)."""
    layout = call.attrs["layout"]
    rank = len(layout)
    data, grid = tensor_info(call, 0), tensor_info(call, 1)
    for name, info in (("data", data), ("grid", grid)):
        if info.ndim >= 0 and info.ndim != rank:
            raise call.error(f"{name} must have rank {rank} for layout {layout}, got rank {info.ndim}")
    if data.shape_values is None or grid.shape_values is None:
        return TensorStructInfo(None, data.dtype, rank)
    spatial = SPATIAL[rank - 2]
    dims = [data.shape_values[axis] if letter in "NC" else grid.shape_values[2 + spatial.index(letter)]
            for axis, letter in enumerate(layout)]
    return make_tensor_info(tuple(dims), data.dtype)


def _clip(position, size):
    """A float position clamped into [0, size - 1]."""
    return tir.Min(tir.Max(position, _f(0.0)), _as_float(tir.Sub(size, int64(1))))


def _reflect(position, size, align_corners: bool):
    """Mirrors a float position at the image's edges until it falls inside: the edges
    are the corner pixels' centres (align_corners) or half a pixel beyond them."""
    span = tir.Sub(size, int64(1)) if align_corners else size
    corner = 0.0 if align_corners else -0.5
    distance = _call("fabs", tir.Sub(_f(corner), position))
    # The number of whole spans crossed; the divisor is kept nonzero for a 1-pixel axis
    # (Select computes both sides), where clipping afterwards gives pixel 0 anyway.
    crossed = tir.Div(tir.Cast(te.INDEX_DTYPE, distance), tir.Max(span, int64(1)))
    extra = tir.Sub(distance, _as_float(tir.Mul(crossed, span)))
    mirrored = tir.Select(tir.EQ(tir.Mod(crossed, int64(2)), int64(0)), tir.Add(extra, _f(corner)),
                          tir.Add(tir.Sub(_as_float(span), extra), _f(corner)))
    inside = tir.And(tir.GE(position, _f(corner)), tir.LE(position, tir.Add(_as_float(span), _f(corner))))
    return tir.Select(inside, position, mirrored)


def _pad_position(position, size, padding_mode: str, align_corners: bool):
    if padding_mode == "border":
        return _clip(position, size)
    if padding_mode == "reflection":
        return _clip(_reflect(position, size, align_corners), size)
    return position


def _pad_index(index, size, padding_mode: str, align_corners: bool):
    """A bicubic neighbour's integer index under the padding mode."""
    if padding_mode == "zeros":
        return index
    position = _pad_position(_as_float(index), size, padding_mode, align_corners)
    return tir.Cast(te.INDEX_DTYPE, position)


def _unnormalize(coordinate, size, align_corners: bool):
    """A grid coordinate in [-1, 1] as a pixel position along an axis of `size` pixels."""
    shifted = tir.Add(_as_float(coordinate), _f(1.0))
    if align_corners:
        return tir.Div(tir.Mul(shifted, _as_float(tir.Sub(size, int64(1)))), _f(2.0))
    return tir.Add(_f(-0.5), tir.Div(tir.Mul(shifted, _as_float(size)), _f(2.0)))


def _axis_taps(method: str, position, size, attrs):
    """For one axis: the neighbours' indices and weights."""
    floor = _call("floor", position)
    start, fraction = tir.Cast(te.INDEX_DTYPE, floor), tir.Sub(position, floor)
    if method == "bilinear":
        return [start, tir.Add(start, int64(1))], [tir.Sub(_f(1.0), fraction), fraction]
    indices = [_pad_index(tir.Add(start, int64(o)), size, attrs["padding_mode"], attrs["align_corners"])
               for o in (-1, 0, 1, 2)]
    return indices, _cubic_weights(fraction, CUBIC_ALPHA)


def grid_sample_compute(call, data: te.Tensor, grid: te.Tensor) -> te.Tensor:
    attrs = call.attrs
    method, padding_mode, align_corners = attrs["method"], attrs["padding_mode"], attrs["align_corners"]
    rank = data.ndim - 2
    sizes = data.shape[2:]
    zero = tir.FloatImm(data.dtype, 0.0) if dt.is_float(data.dtype) else tir.IntImm(data.dtype, 0)

    def pixel(n, c, indices):
        return if_then_else(in_bounds(indices, sizes), data[(n, c, *indices)], zero)

    def blend(n, c, taps, chosen=()):
        """The weighted sum over the neighbours of the axes from len(chosen) on."""
        if len(chosen) == rank:
            return _as_float(pixel(n, c, chosen))
        indices, weights = taps[len(chosen)]
        return _weighted_sum([blend(n, c, taps, (*chosen, index)) for index in indices], weights)

    def body(n, c, *out):
        # Grid channel 0 is x (the innermost axis), so spatial axis i reads channel rank - 1 - i.
        positions = [_unnormalize(grid[(n, int64(rank - 1 - axis), *out)], size, align_corners)
                     for axis, size in enumerate(sizes)]
        if method == "nearest":
            indices = [tir.Cast(te.INDEX_DTYPE, _call("nearbyint", _pad_position(p, s, padding_mode, align_corners)))
                       for p, s in zip(positions, sizes)]
            return pixel(n, c, indices)
        if method == "bilinear":
            positions = [_pad_position(p, s, padding_mode, align_corners) for p, s in zip(positions, sizes)]
        value = blend(n, c, [_axis_taps(method, p, s, attrs) for p, s in zip(positions, sizes)])
        return value if data.dtype == FLOAT else tir.Cast(data.dtype, value)

    out_dims = (data.shape[0], data.shape[1], *grid.shape[2:])
    return te.compute(out_dims, body, "grid_sample", data.dtype)


def _check_kernel(call, data: TensorStructInfo, grid: TensorStructInfo) -> None:
    """What the kernel needs beyond inference: topi's layouts and methods, float inputs,
    and a grid with one channel per spatial axis for data's batch."""
    layout, method = call.attrs["layout"], call.attrs["method"]
    if layout not in KERNEL_LAYOUTS:
        raise call.error(f"grid_sample is lowered only for layouts NCHW and NCDHW, got {layout}")
    if method == "bicubic" and len(layout) == 5:
        raise call.error("bicubic grid sampling is 2-D only")
    if method != "nearest" and not dt.is_float(data.dtype):
        raise call.error(f"{method} grid sampling needs a floating-point tensor, got {data.dtype}")
    if not dt.is_float(grid.dtype):
        raise call.error(f"grid must be floating-point, got {grid.dtype}")
    channels = static_value(grid.shape_values[1])
    if channels is not None and channels != len(layout) - 2:
        raise call.error(f"grid must have {len(layout) - 2} channels at axis 1, got {channels}")
    batches = static_value(data.shape_values[0]), static_value(grid.shape_values[0])
    if None not in batches and batches[0] != batches[1]:
        raise call.error(f"grid has batch {batches[1]}, data has batch {batches[0]}")


def grid_sample_legalize(call, context):
    info = grid_sample_infer(call)
    data, grid = tensor_info(call, 0), tensor_info(call, 1)
    if info.shape_values is None:
        return None
    _check_kernel(call, data, grid)
    return context.call_te(lambda d, g: grid_sample_compute(call, d, g), call.args[:2], call.arg_info[:2],
                           "grid_sample")


register(OpDef(
    name="relax.image.affine_grid",
    args=("data", "size"),
    attrs=(AttrSpec("align_corners", True),),
    infer=affine_grid_infer,
    pattern="injective",
    legalize=affine_grid_legalize,
    doc="the sampling grid (N, 2, H, W) or (N, 3, D, H, W) of a batch of affine matrices",
))

register(OpDef(
    name="relax.image.grid_sample",
    args=("data", "grid"),
    attrs=(
        AttrSpec("method", "bilinear", _one_of(METHODS)),
        AttrSpec("layout", "NCHW", _layout_check),
        AttrSpec("padding_mode", "zeros", _one_of(PADDING_MODES)),
        AttrSpec("align_corners", False),
    ),
    infer=grid_sample_infer,
    pattern="injective",
    legalize=grid_sample_legalize,
    doc="sample an image (NCHW or NCDHW) at a grid of normalized coordinates",
))
