"""Reading and printing the distributed syntax of TVM 0.27 (ir/dtensor.py):

    I.module_global_infos({"mesh": [R.device_mesh((2,), I.Range(0, 2))]})
    x: R.DTensor((8, 16), "float32", "mesh[0]", "S[1]")

TVM 0.27 prints `R.device_mesh` and `R.DTensor` but its own parser only knows them as
`R.dist.device_mesh` and `R.dist.DTensor`; both spellings are read here, and the
printer writes what TVM prints.
"""

from __future__ import annotations

import ast

from ..ir.dtensor import DTensorStructInfo, ShardingError, device_mesh, parse_placement, placement_text
from ..ir.struct_info import TensorStructInfo

DTENSOR_NAMES = ("DTensor", "dist.DTensor")
MESH_NAMES = (("relax", "device_mesh"), ("relax", "dist.device_mesh"))


def read_dtensor(parser, node, args, kwargs, span) -> DTensorStructInfo:
    """`R.DTensor(shape, dtype, device_mesh, placement)`, positions or keywords."""
    parser._check_arguments(node, "R.DTensor", args, kwargs, 4, ("shape", "dtype", "device_mesh", "placement"))
    nodes = [args[i] if i < len(args) else kwargs.get(key)
             for i, key in enumerate(("shape", "dtype", "device_mesh", "placement"))]
    if nodes[0] is None or nodes[2] is None or nodes[3] is None:
        raise parser.ctx.fail("R.DTensor takes a shape, a dtype, a device mesh and a placement", node)
    tensor = TensorStructInfo(parser._tensor_shape(nodes[0]),
                              "void" if nodes[1] is None else parser.dtype_string(nodes[1], allow_none=True))
    mesh = parser._string(nodes[2], "a device mesh such as \"mesh[0]\"")
    text = parser._string(nodes[3], "a placement such as \"S[1]\" or \"R\"")
    try:
        placement = parse_placement(text)
    except ShardingError as error:
        raise parser.ctx.fail(str(error), nodes[3]) from None
    return DTensorStructInfo(tensor.shape, tensor.dtype, tensor.ndim, None, mesh, placement, span=span)


def read_device_mesh(node: ast.Call, ctx, attr_value):
    """`R.device_mesh((2,), I.Range(0, 2))` as the mesh's global info."""
    if len(node.args) != 2 or node.keywords:
        raise ctx.fail("R.device_mesh takes a shape and a device range, I.Range(first, end)", node)
    shape = attr_value(node.args[0], ctx)
    span = node.args[1]
    if not (isinstance(span, ast.Call) and ctx.dialect_of(span.func) == ("ir", "Range") and len(span.args) == 2):
        raise ctx.fail("expected the mesh's devices as I.Range(first, end)", span)
    first, end = (attr_value(a, ctx) for a in span.args)
    try:
        return device_mesh(tuple(shape) if isinstance(shape, tuple) else (shape,), first, end)
    except (ShardingError, TypeError) as error:
        raise ctx.fail(str(error), node) from None


def print_device_mesh(printer, value) -> str:
    shape = "(" + ", ".join(str(d) for d in value["shape"]) + ("," if len(value["shape"]) == 1 else "") + ")"
    first, end = value["device_range"]
    return f"{printer.ctx.relax('device_mesh')}({shape}, {printer.ctx.ir('Range')}({first}, {end}))"


def print_dtensor(printer, info: DTensorStructInfo) -> str:
    dims = [printer.dim(v) for v in info.shape_values or ()]
    shape = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
    return (f"{printer.ctx.relax('DTensor')}({shape}, \"{info.dtype}\", \"{info.device_mesh}\", "
            f"\"{placement_text(info.placement)}\")")
