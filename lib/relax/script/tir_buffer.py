"""Buffer declarations of TIR: `T.Buffer(...)`, `T.match_buffer`, `T.alloc_buffer`,
`T.sblock_alloc_buffer`, `T.decl_buffer`, `T.alloc_local`, `T.alloc_shared`, `A.view(...)`.

Each spelling takes the same fields (shape, dtype, data, strides, ...) in its own
positional order, as TVM's builder functions do; the orders are data below. What
the declaration means (a parameter's buffer, a block allocation, a statement)
is the caller's business: this module only builds the Buffer.
"""

from __future__ import annotations

import ast
from dataclasses import field

from ..ir import FrozenDict, tir
from ..records import record
from .context import ParseContext, Scope
from .prim_expr import PrimExprParser, embedded_expression, require_integer
from .tir_values import parse_attr_dict

# Positional parameter order of each declaration function (TVM 0.27's builders).
_COMMON = ("data", "strides", "elem_offset")
SIGNATURES: dict[str, tuple[str, ...]] = {
    "Buffer": ("shape", "dtype", *_COMMON, "scope", "align", "offset_factor", "buffer_type", "axis_separators"),
    "match_buffer": ("param", "shape", "dtype", *_COMMON, "scope", "align", "offset_factor", "layout"),
    "alloc_buffer": ("shape", "dtype", *_COMMON, "byte_offset", "scope", "align", "offset_factor", "layout", "allocated_addr"),
    "sblock_alloc_buffer": ("shape", "dtype", *_COMMON, "scope", "align", "offset_factor", "layout", "allocated_addr"),
    "decl_buffer": ("shape", "dtype", *_COMMON, "byte_offset", "scope", "align", "offset_factor", "layout", "allocated_addr"),
    "alloc_local": ("shape", "dtype", *_COMMON, "align", "offset_factor", "layout"),
    "alloc_shared": ("shape", "dtype", *_COMMON, "align", "offset_factor", "layout"),
}
SIGNATURES["block_alloc_buffer"] = SIGNATURES["sblock_alloc_buffer"]
_KEYWORD_ONLY = ("annotations",)
# Fields TVM accepts that this IR does not model; they must keep their defaults.
_IGNORED_DEFAULTS = {"layout": ("default", None), "buffer_type": ("", "default"), "allocated_addr": (None,), "byte_offset": (None,)}
# Memory scope implied by the spelling.
IMPLIED_SCOPE = {"alloc_local": "local", "alloc_shared": "shared"}


@record(mutable=True)
class BufferDecl:
    buffer: tir.Buffer
    param: ast.expr | None = None  # match_buffer's first argument, unparsed
    annotations: FrozenDict = field(default_factory=FrozenDict)
    data_value: tir.PrimExpr | None = None  # `data=<expression>`: bound to buffer.data first


def bind_arguments(kind: str, call: ast.Call, ctx: ParseContext) -> dict[str, ast.expr]:
    """Argument nodes by parameter name; errors on unknown or repeated names."""
    names = SIGNATURES[kind]
    if len(call.args) > len(names):
        raise ctx.fail(f"T.{kind} takes at most {len(names)} positional arguments, got {len(call.args)}", call)
    bound = dict(zip(names, call.args))
    for keyword in call.keywords:
        if keyword.arg not in names and keyword.arg not in _KEYWORD_ONLY:
            raise ctx.fail(f"T.{kind} has no parameter '{keyword.arg}'", keyword)
        if keyword.arg in bound:
            raise ctx.fail(f"T.{kind} got '{keyword.arg}' twice", keyword)
        bound[keyword.arg] = keyword.value
    return bound


class BufferParser:
    def __init__(self, ctx: ParseContext, scope: Scope):
        self.ctx = ctx
        self.scope = scope
        self.exprs = PrimExprParser(ctx, scope)

    def declaration(self, kind: str, call: ast.Call, name: str) -> BufferDecl:
        """The buffer that `name = T.<kind>(...)` (or a parameter annotation) declares."""
        args = bind_arguments(kind, call, self.ctx)
        if "shape" not in args:
            raise self.ctx.fail(f"T.{kind} needs a shape", call)
        for ignored, defaults in _IGNORED_DEFAULTS.items():
            node = args.get(ignored)
            if node is not None and not (isinstance(node, ast.Constant) and node.value in defaults):
                raise self.ctx.fail(f"'{ignored}' of T.{kind} is not supported", node)
        shape = self.shape(args["shape"])
        dtype = self.exprs.dtype_string(args["dtype"]) if "dtype" in args else "float32"
        data_value = None
        if "data" in args:
            data = self.exprs.parse(args["data"])
            if not isinstance(data, tir.Var):
                if data.dtype != "handle":
                    raise self.ctx.fail("a buffer's data is a handle", args["data"])
                # Lowered host code computes the pointer in place; bind it to a variable.
                data, data_value = tir.Var(f"{name}_data", "handle", span=self.ctx.span(args["data"])), data
        else:
            data = tir.Var(name, "handle", span=self.ctx.span(call))
        buffer = tir.Buffer(
            name,
            shape,
            dtype,
            data=data,
            strides=self.shape(args["strides"]) if "strides" in args and not _is_none(args["strides"]) else (),
            elem_offset=self.optional_expr(args.get("elem_offset")),
            scope=self.string(args["scope"]) if "scope" in args else IMPLIED_SCOPE.get(kind, "global"),
            axis_separators=self.int_tuple(args["axis_separators"]) if "axis_separators" in args else (),
            offset_factor=self.exprs.constant_int(args["offset_factor"]) if "offset_factor" in args else 0,
            align=self.exprs.constant_int(args["align"]) if "align" in args else 0,
            span=self.ctx.span(call),
        )
        annotations = parse_attr_dict(args["annotations"], self.ctx, self.scope) if "annotations" in args else FrozenDict()
        return BufferDecl(buffer, args.get("param"), annotations, data_value)

    def view(self, source: tir.Buffer, call: ast.Call, name: str) -> tir.Buffer:
        """`B = A.view(shape)` or `A.view(dtype)`: the same data seen with another shape or type."""
        if call.keywords:
            raise self.ctx.fail("view takes a shape or a dtype", call.keywords[0])
        if len(call.args) == 1 and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
            return tir.Buffer(name, source.shape, self.exprs.dtype_string(call.args[0]), data=source.data,
                              scope=source.scope, span=self.ctx.span(call))
        shape_nodes = call.args[0] if len(call.args) == 1 and isinstance(call.args[0], (ast.Tuple, ast.List)) else call.args
        shape = self.shape(ast.Tuple(list(shape_nodes.elts if isinstance(shape_nodes, (ast.Tuple, ast.List)) else shape_nodes)))
        return tir.Buffer(name, shape, source.dtype, data=source.data, scope=source.scope, span=self.ctx.span(call))

    # -- fields ----------------------------------------------------------------
    def shape(self, node: ast.expr) -> tuple[tir.PrimExpr, ...]:
        elements = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
        return tuple(self.dimension(element) for element in elements)

    def dimension(self, node: ast.expr) -> tir.PrimExpr:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node = embedded_expression(node, self.ctx)
        return require_integer(self.ctx, self.exprs.parse(node), node, "a buffer dimension")

    def optional_expr(self, node: ast.expr | None) -> tir.PrimExpr | None:
        return None if node is None or _is_none(node) else self.exprs.parse(node)

    def string(self, node: ast.expr) -> str:
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            raise self.ctx.fail("expected a string", node)
        return node.value

    def int_tuple(self, node: ast.expr) -> tuple[int, ...]:
        if _is_none(node):
            return ()
        elements = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
        return tuple(self.exprs.constant_int(element) for element in elements)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
