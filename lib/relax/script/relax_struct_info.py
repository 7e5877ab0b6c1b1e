"""Struct info annotations of Relax functions: `R.Tensor((n, 4), dtype="float32")`.

The readers here turn annotation syntax into StructInfo nodes:

    R.Tensor((d0, d1), dtype="float32")   R.Tensor((2, 3), "float32")
    R.Tensor(dtype="float32", ndim=2)     R.Tensor(ndim=-1)   R.Tensor   R.Tensor(s)
    R.Tensor("float32", ndim=2)          R.Tensor((2,), "float32", "llvm:0")   x.struct_info
    R.Shape([n, 4])   R.Shape(ndim=2)     R.Shape
    R.Tuple(a, b)     R.Tuple([a, b])     R.Tuple
    R.Object  R.Any   R.Prim("int64")     R.Prim(value=n)     T.int64 (TVM 0.27's R.Prim)
    R.Callable((params...), ret[, purity])   R.Callable(ret=..., purity=False)

Shape dimensions are PrimExprs read by the TIR expression parser with int64 as the
type of bare integers. A string dimension names a symbolic variable (TVM prints the
variables a signature defines that way): an identifier is looked up and defined at
first use in the function's symbolic scope; any other string is read as an
expression over such variables.
"""

from __future__ import annotations

import ast
import difflib
import re

from ..ir import ShapeExpr, Var, tir
from ..ir.struct_info import (
    FuncStructInfo, ObjectStructInfo, PrimStructInfo, ShapeStructInfo, StructInfo,
    TensorStructInfo, TupleStructInfo,
)
from ..diagnostics import Diagnostic
from .ast_nodes import METADATA_MESSAGE, describe, is_metadata
from .context import ParseAbort, ParseContext, Scope
from .literal_limits import MAX_RANK, describe_int, rank_error, require_fits
from .prim_expr import is_known_dtype, parse_prim_expr
from .relax_dtensor import DTENSOR_NAMES, read_dtensor

STRUCT_INFO_NAMES = ("Tensor", "Shape", "Tuple", "Object", "Any", "Prim", "Callable", *DTENSOR_NAMES)
# Where shape strings sit: R.Tensor's shape, R.Shape's values, R.Prim's value (position, keyword).
_SHAPE_ARGUMENTS = {"Tensor": (0, "shape"), "Shape": (0, "values"), "Prim": (None, "value")}
_KINDS = "R.Tensor, R.Shape, R.Tuple, R.Prim, R.Callable or R.Any"
# TVM 0.27 annotates string values with the IR type `I.StringType()`; Relax knows
# them as objects.
_IR_STRUCT_INFO_NAMES = ("StringType",)

# Low-precision float types TVM knows beyond the ones `relax.ir.dtype` spells.
_EXTRA_DTYPES = re.compile(r"^float[468]_e\d+m\d+(fn|fnuz)?(x\d+)?$")


class StructInfoParser:
    """Reads annotations; the Relax expression parser builds on it."""

    ctx: ParseContext
    scope: Scope
    # The scope of the enclosing function, where symbolic variables named by strings live.
    symbolic_scope: Scope
    # The symbolic variables that strings named in this function, by name.
    string_symbols: dict[str, tir.Var]
    # Names defined in a dataflow block or if branch that has ended: why, and where.
    hidden_names: dict[str, tuple[str, object]]

    # -- entry point -------------------------------------------------------------
    def is_struct_info(self, node: ast.expr) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        dialect = self.ctx.dialect_of(target)
        if dialect is None:
            return False
        if dialect[0] == "tir":
            return not isinstance(node, ast.Call) and is_known_dtype(dialect[1])
        if dialect[0] == "ir":
            return dialect[1] in _IR_STRUCT_INFO_NAMES
        return dialect[0] == "relax" and dialect[1] in STRUCT_INFO_NAMES

    def struct_info(self, node: ast.expr) -> StructInfo:
        if isinstance(node, ast.Constant) and node.value is None:
            return TupleStructInfo((), span=self.ctx.span(node))  # `-> None`: returns nothing
        if isinstance(node, ast.Attribute) and node.attr == "struct_info" and isinstance(node.value, ast.Name):
            return self._struct_info_of(node)
        call = node if isinstance(node, ast.Call) else None
        target = node.func if call is not None else node
        dialect = self.ctx.dialect_of(target)
        if not self.is_struct_info(node):
            if is_metadata(node):
                raise self.ctx.fail(METADATA_MESSAGE, node)
            if dialect is not None and dialect[0] == "relax":
                raise self.ctx.fail(f"unknown struct info 'R.{dialect[1]}'; expected {_KINDS}", target)
            raise self.ctx.fail(f"expected struct info such as {_KINDS}, got '{describe(node)}'", node)
        span = self.ctx.span(node)
        if dialect[0] == "tir":
            return PrimStructInfo(dialect[1], span=span)
        if dialect[0] == "ir":
            return ObjectStructInfo(span=span)
        reader = _READERS[dialect[1]]
        args = list(call.args) if call is not None else []
        kwargs = {keyword.arg: keyword.value for keyword in call.keywords} if call is not None else {}
        if None in kwargs:
            raise self.ctx.fail("'**' arguments are not allowed in struct info", node)
        return reader(self, node, args, kwargs, span)

    def struct_info_list(self, node: ast.expr) -> StructInfo:
        """`out_sinfo=` values: one struct info, or a list of them (a tuple's fields)."""
        if isinstance(node, (ast.List, ast.Tuple)):
            return TupleStructInfo(tuple(self.struct_info(e) for e in node.elts), span=self.ctx.span(node))
        return self.struct_info(node)

    def _struct_info_of(self, node: ast.Attribute) -> StructInfo:
        """`x.struct_info`: the annotated struct info of variable x."""
        found = self.scope.lookup(node.value.id)
        if found is None:
            raise self.undefined(node.value.id, node.value)
        info = getattr(found, "struct_info", None) if isinstance(found, Var) else None
        if info is None:
            raise self.ctx.fail(f"'{node.value.id}' has no annotated struct info to refer to", node)
        return info

    def undefined(self, name: str, node: ast.AST) -> ParseAbort:
        """Records the error for a name not in scope, saying why when the name was
        defined in a block or branch that has ended, else suggesting a close name."""
        hidden = self.hidden_names.get(name)
        if hidden is not None:
            reason, span = hidden
            return self.ctx.fail(f"'{name}' is not visible here: {reason}", node,
                                 (Diagnostic("note", f"'{name}' is defined here", span),))
        candidates = []
        scope = self.scope
        while scope is not None:
            candidates.extend(n for n, v in scope.names.items() if isinstance(v, (Var, tir.Var)))
            scope = scope.parent
        close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.7)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return self.ctx.fail(f"undefined variable '{name}'{hint}", node)

    # -- one reader per kind ---------------------------------------------------------
    def _sinfo_object(self, node, args, kwargs, span) -> StructInfo:
        self._check_arguments(node, "R.Object", args, kwargs, 0, ())
        return ObjectStructInfo(span=span)

    def _sinfo_any(self, node, args, kwargs, span) -> StructInfo:
        self._check_arguments(node, "R.Any", args, kwargs, 0, ())
        return ObjectStructInfo(span=span)

    def _sinfo_tensor(self, node, args, kwargs, span) -> StructInfo:
        self._check_arguments(node, "R.Tensor", args, kwargs, 4, ("shape", "dtype", "vdevice", "ndim"))
        shape_node = _take(args, 0, kwargs, "shape")
        dtype_node = _take(args, 1, kwargs, "dtype")
        if dtype_node is None and isinstance(shape_node, ast.Constant) and isinstance(shape_node.value, str):
            shape_node, dtype_node = None, shape_node  # R.Tensor("float32", ndim=2)
        shape = None if shape_node is None else self._tensor_shape(shape_node)
        dtype = "void" if dtype_node is None else self.dtype_string(dtype_node, allow_none=True)
        ndim = -1
        ndim_node = _take(args, 3, kwargs, "ndim")
        if ndim_node is not None:
            ndim = self._ndim(ndim_node)
            values = getattr(shape, "values", None)
            if values is not None and ndim not in (-1, len(values)):
                raise self.ctx.fail(f"ndim={ndim} does not match the {len(values)} dimensions of the shape", ndim_node)
        vdevice = None
        vdevice_node = _take(args, 2, kwargs, "vdevice")
        if vdevice_node is not None and not (isinstance(vdevice_node, ast.Constant) and vdevice_node.value is None):
            vdevice = self._string(vdevice_node, "a virtual device such as \"llvm:0\"")
        return TensorStructInfo(shape, dtype, ndim, vdevice, span=span)

    def _tensor_shape(self, node: ast.expr):
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        if isinstance(node, (ast.Tuple, ast.List)):
            return ShapeExpr(self.sizes(node), span=self.ctx.span(node))
        # A variable of shape struct info: `R.Tensor(s, dtype="float32")`.
        if isinstance(node, ast.Name):
            found = self.scope.lookup(node.id)
            if isinstance(found, Var):
                return found
            if found is None:
                raise self.undefined(node.id, node)
        raise self.ctx.fail("the shape of R.Tensor must be a tuple of dimensions such as (n, 4)", node)

    def _sinfo_shape(self, node, args, kwargs, span) -> StructInfo:
        self._check_arguments(node, "R.Shape", args, kwargs, 1, ("values", "ndim"))
        values_node = _take(args, 0, kwargs, "values")
        if values_node is not None and not (isinstance(values_node, ast.Constant) and values_node.value is None):
            if not isinstance(values_node, (ast.List, ast.Tuple)):
                raise self.ctx.fail("the values of R.Shape must be a list of dimensions such as [n, 4]", values_node)
            values = self.shape_dims(values_node)
            if "ndim" in kwargs and self._ndim(kwargs["ndim"]) not in (-1, len(values)):
                raise self.ctx.fail(f"ndim does not match the {len(values)} values of the shape", kwargs["ndim"])
            return ShapeStructInfo(values, span=span)
        ndim = self._ndim(kwargs["ndim"]) if "ndim" in kwargs else -1
        return ShapeStructInfo(None, ndim, span=span)

    def _sinfo_tuple(self, node, args, kwargs, span) -> StructInfo:
        self._check_arguments(node, "R.Tuple", args, kwargs, None, ())
        if len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
            args = list(args[0].elts)
        return TupleStructInfo(tuple(self.struct_info(field) for field in args), span=span)

    def _sinfo_prim(self, node, args, kwargs, span) -> StructInfo:
        self._check_arguments(node, "R.Prim", args, kwargs, 1, ("dtype", "value"))
        dtype_node = _take(args, 0, kwargs, "dtype")
        value_node = kwargs.get("value")
        if value_node is None:
            if dtype_node is None:
                raise self.ctx.fail("R.Prim needs a data type or a value: R.Prim(\"int64\") or R.Prim(value=n)", node)
            return PrimStructInfo(self.dtype_string(dtype_node), span=span)
        value = self.symbolic_value(value_node)
        dtype = value.dtype if dtype_node is None else self.dtype_string(dtype_node)
        if dtype != value.dtype:
            raise self.ctx.fail(f"the value of R.Prim has type {value.dtype}, not {dtype}", value_node)
        return PrimStructInfo(dtype, value, span=span)

    def _sinfo_callable(self, node, args, kwargs, span) -> StructInfo:
        self._check_arguments(node, "R.Callable", args, kwargs, 3, ("params", "ret", "purity"))
        params_node = _take(args, 0, kwargs, "params")
        ret_node = _take(args, 1, kwargs, "ret")
        purity_node = _take(args, 2, kwargs, "purity")
        params = None
        if params_node is not None and not (isinstance(params_node, ast.Constant) and params_node.value is None):
            if not isinstance(params_node, (ast.Tuple, ast.List)):
                raise self.ctx.fail("the parameters of R.Callable must be a tuple of struct infos", params_node)
            params = tuple(self.struct_info(p) for p in params_node.elts)
        ret = ObjectStructInfo() if ret_node is None else self.struct_info(ret_node)
        purity = True
        if purity_node is not None:
            if not (isinstance(purity_node, ast.Constant) and isinstance(purity_node.value, bool)):
                raise self.ctx.fail("purity must be True or False", purity_node)
            purity = purity_node.value
        return FuncStructInfo(params, ret, purity, span=span)

    # -- pieces ----------------------------------------------------------------------
    def shape_dims(self, node: ast.Tuple | ast.List) -> tuple[tir.PrimExpr, ...]:
        """The dimensions of a shape literal, refused before any is read when there are
        more than a tensor can have."""
        too_many = rank_error(len(node.elts))
        if too_many is not None:
            raise self.ctx.fail(too_many, node)
        return tuple(self.shape_dim(d) for d in node.elts)

    def sizes(self, node: ast.Tuple | ast.List) -> tuple[tir.PrimExpr, ...]:
        """The dimensions of a tensor annotation: sizes, so none is a negative constant
        (a shape value such as reshape's R.shape([-1]) may hold one)."""
        dims = self.shape_dims(node)
        for element, dim in zip(node.elts, dims):
            if isinstance(dim, tir.IntImm) and dim.value < 0:
                raise self.ctx.fail(f"a dimension cannot be negative ({dim.value})", element)
        return dims

    def shape_dim(self, node: ast.expr) -> tir.PrimExpr:
        """One dimension: an int, a string naming a symbolic variable, or an integer
        PrimExpr over the symbolic variables in scope."""
        value = self.symbolic_value(node)
        if value.dtype != "int64":
            raise self.ctx.fail(f"a dimension must be an int64 value, not {value.dtype}", node)
        return value

    def symbolic_value(self, node: ast.expr) -> tir.PrimExpr:
        """A value known at compile time or symbolically (R.Prim(value=...), R.prim_value)."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, int) and not isinstance(node.value, bool):
                require_fits(self.ctx, node, node.value, "int64")
                return tir.IntImm("int64", node.value, span=self.ctx.span(node))
            if isinstance(node.value, str):
                return self._string_dim(node)
        if isinstance(node, ast.Name):
            found = self.scope.lookup(node.id)
            if isinstance(found, tir.Var):
                return found
        return self.prim_expr(node)

    def prim_expr(self, node: ast.expr) -> tir.PrimExpr:
        return parse_prim_expr(node, self.ctx, self.scope, "int64")

    def declare_shape_strings(self, annotation: ast.expr) -> None:
        """Defines the symbolic variables that identifier strings name in an annotation,
        so that `x: R.Tensor(("m + 1",)), y: R.Tensor(("m",))` reads in either order."""
        pending = [annotation]
        while pending:
            call = pending.pop()
            if isinstance(call, (ast.Tuple, ast.List)):
                pending.extend(call.elts)
            if not isinstance(call, ast.Call):
                continue
            dialect = self.ctx.dialect_of(call.func)
            if dialect is None or dialect[0] != "relax" or dialect[1] not in _SHAPE_ARGUMENTS:
                pending.extend(call.args)  # R.Tuple(...), R.Callable(...): struct infos inside
                pending.extend(k.value for k in call.keywords)
                continue
            index, keyword = _SHAPE_ARGUMENTS[dialect[1]]
            dims = call.args[index] if index is not None and len(call.args) > index else None
            dims = next((k.value for k in call.keywords if k.arg == keyword), dims)
            elements = dims.elts if isinstance(dims, (ast.Tuple, ast.List)) else [dims]
            if len(elements) > MAX_RANK:
                continue  # refused where the shape is read
            for element in elements:
                if isinstance(element, ast.Constant) and isinstance(element.value, str) \
                        and element.value.strip().isidentifier():
                    self._string_dim(element)

    def _string_dim(self, node: ast.Constant) -> tir.PrimExpr:
        text = node.value.strip()
        if text.isidentifier():
            found = self.scope.lookup(text)
            if isinstance(found, tir.Var):
                return found
            var = self.string_symbols.get(text)
            if var is None:
                var = tir.Var(text, "int64", span=self.ctx.span(node))
                self.string_symbols[text] = var
                # A parameter of the same name keeps its name; the string still finds `var`.
                if not isinstance(self.symbolic_scope.names.get(text), Var):
                    self.symbolic_scope.define(text, var)
            return var
        try:
            parsed = ast.parse(text, mode="eval").body
        except SyntaxError:
            raise self.ctx.fail(f"'{node.value}' is not a shape expression", node) from None
        # Errors inside the string point at the string itself.
        for inner in ast.walk(parsed):
            if hasattr(inner, "lineno"):
                ast.copy_location(inner, node)
                inner.end_lineno, inner.end_col_offset = node.end_lineno, node.end_col_offset
        return self.prim_expr(parsed)

    def dtype_string(self, node: ast.expr, allow_none: bool = False) -> str:
        if allow_none and isinstance(node, ast.Constant) and node.value is None:
            return "void"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        else:
            dialect = self.ctx.dialect_of(node)
            if dialect is None or dialect[0] != "tir":
                raise self.ctx.fail("expected a data type such as \"float32\"", node)
            name = dialect[1]
        if name not in ("void", "") and not is_known_dtype(name) and not _EXTRA_DTYPES.match(name):
            raise self.ctx.fail(f"unknown data type '{name}'", node)
        return name or "void"

    def _ndim(self, node: ast.expr) -> int:
        value = node
        sign = 1
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
            sign, value = -1, value.operand
        if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
            ndim = sign * value.value
            if ndim > MAX_RANK:
                raise self.ctx.fail(rank_error(ndim, f"ndim={describe_int(ndim)}"), node)
            if ndim >= -1:
                return ndim
        raise self.ctx.fail("ndim must be a non-negative integer, or -1 for unknown", node)

    def _string(self, node: ast.expr, what: str) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        raise self.ctx.fail(f"expected {what}", node)

    def _check_arguments(self, node, name: str, args, kwargs, max_positional: int | None, keywords) -> None:
        if max_positional is not None and len(args) > max_positional:
            raise self.ctx.fail(
                f"{name} takes at most {max_positional} positional argument{'s' if max_positional != 1 else ''},"
                f" got {len(args)}",
                args[max_positional],
            )
        for key, value in kwargs.items():
            if key not in keywords:
                raise self.ctx.fail(f"{name} has no argument '{key}'", value)


_READERS = {
    "Object": StructInfoParser._sinfo_object,
    "Any": StructInfoParser._sinfo_any,
    "Tensor": StructInfoParser._sinfo_tensor,
    "Shape": StructInfoParser._sinfo_shape,
    "Tuple": StructInfoParser._sinfo_tuple,
    "Prim": StructInfoParser._sinfo_prim,
    "Callable": StructInfoParser._sinfo_callable,
    **dict.fromkeys(DTENSOR_NAMES, read_dtensor),
}


def _take(args: list, index: int, kwargs: dict, key: str):
    """An argument given by position or by keyword."""
    if index < len(args):
        return args[index]
    return kwargs.get(key)
