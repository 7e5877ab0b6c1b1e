"""Python text for the values a converted function writes: symbolic sizes (TIR PrimExprs),
struct info in `out_sinfo=` (`R.Tensor((n, 20), "float32")`), and constants.

Sizes print as Python integer arithmetic over variables read from the arguments
(`n = x.shape[0]`), so `n * m` in a shape is the same product at run time. Constants
print through the backend (numpy or torch): scalars and small tensors as literals, larger
ones as their exact bytes in base64 (see `constant_text`), so the converted function
needs nothing but its own text.
"""

from __future__ import annotations

import base64

import numpy as np

from ..diagnostics import UserError
from ..ir import tir_expr as tir
from ..ir.struct_info import PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo

# Constants with at most this many elements print as a literal list; larger ones as bytes.
LITERAL_ELEMENTS = 64

# Python operators for TIR's binary nodes; floor division and modulo are Python's own.
_OPERATORS = {
    tir.Add: "+", tir.Sub: "-", tir.Mul: "*", tir.FloorDiv: "//", tir.FloorMod: "%",
    tir.EQ: "==", tir.NE: "!=", tir.LT: "<", tir.LE: "<=", tir.GT: ">", tir.GE: ">=",
    tir.And: "and", tir.Or: "or",
}


def prim_text(expr, names) -> str:
    """`expr` (a TIR PrimExpr over symbolic sizes) as a Python expression; `names` maps a
    size variable's name to its Python name."""
    if isinstance(expr, tir.IntImm):
        return str(bool(expr.value)) if expr.dtype == "bool" else str(int(expr.value))
    if isinstance(expr, tir.FloatImm):
        return repr(float(expr.value))
    if isinstance(expr, tir.Var):
        if expr.name not in names:
            raise UserError(f"as_pyfunc: the size variable '{expr.name}' is not defined by any argument "
                            "or match_cast before its use")
        return names[expr.name]
    if isinstance(expr, tir.Cast):
        return f"{'float' if expr.dtype.startswith(('float', 'bfloat')) else 'int'}({prim_text(expr.value, names)})"
    if isinstance(expr, (tir.Div, tir.Mod)):
        # TIR's Div/Mod truncate toward zero on integers
        a, b = prim_text(expr.a, names), prim_text(expr.b, names)
        if expr.dtype.startswith("float"):
            return f"({a} / {b})" if isinstance(expr, tir.Div) else f"math.fmod({a}, {b})"
        return f"int({a} / {b})" if isinstance(expr, tir.Div) else f"int(math.fmod({a}, {b}))"
    if isinstance(expr, (tir.Min, tir.Max)):
        return f"{type(expr).__name__.lower()}({prim_text(expr.a, names)}, {prim_text(expr.b, names)})"
    if isinstance(expr, tir.Not):
        return f"(not {prim_text(expr.a, names)})"
    if type(expr) in _OPERATORS:
        return f"({prim_text(expr.a, names)} {_OPERATORS[type(expr)]} {prim_text(expr.b, names)})"
    raise UserError(f"as_pyfunc: cannot write the size expression {type(expr).__name__} in Python")


def strip_parens(text: str) -> str:
    """`(n * m)` -> `n * m` where the parentheses enclose the whole text."""
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for index, char in enumerate(text):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and index < len(text) - 1:
                return text
        return text[1:-1]
    return text


def shape_text(values, names) -> str:
    """A shape as a Python tuple: `(n, 20)`, `(3,)`, `()`."""
    items = [strip_parens(prim_text(value, names)) for value in values]
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def sinfo_text(info: StructInfo, names) -> str:
    """Struct info as the `R.` spelling that `self.call_tir(..., out_sinfo=...)` takes."""
    if isinstance(info, TensorStructInfo):
        values = info.shape_values
        if values is None:
            raise UserError("as_pyfunc: an output of call_tir/call_dps_packed has no known shape")
        return f'R.Tensor({shape_text(values, names)}, "{info.dtype}")'
    if isinstance(info, TupleStructInfo):
        return f"[{', '.join(sinfo_text(field, names) for field in info.fields)}]"
    if isinstance(info, ShapeStructInfo) and info.values is not None:
        return f"R.Shape([{', '.join(strip_parens(prim_text(v, names)) for v in info.values)}])"
    if isinstance(info, PrimStructInfo):
        return f'R.Prim("{info.dtype}")'
    raise UserError(f"as_pyfunc: cannot write the struct info {type(info).__name__} as an out_sinfo")


def literal_list(array: np.ndarray) -> str:
    """The elements of `array` as a nested Python list whose values read back exactly."""
    if array.dtype == np.bool_:
        return repr(array.tolist())
    if array.dtype.kind == "f":
        # float64 repr of a float32/float16 value reads back to the same value after the cast
        return repr(array.astype(np.float64).tolist()).replace("inf", "float('inf')").replace("nan", "float('nan')")
    return repr(array.tolist())


def constant_text(array: np.ndarray, tensor: str) -> str:
    """A constant tensor through the backend's constructor `tensor` ("np.array" or
    "torch.tensor"): a literal when small, its little-endian bytes in base64 otherwise."""
    dtype = array.dtype.name
    if array.size <= LITERAL_ELEMENTS:
        return f'{tensor}({literal_list(array)}, dtype={_dtype_arg(tensor, dtype)})'
    data = base64.b64encode(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()).decode()
    shape = tuple(int(d) for d in array.shape)
    as_numpy = f'np.frombuffer(base64.b64decode("{data}"), dtype="<{array.dtype.str[1:]}").reshape({shape})'
    if tensor == "np.array":
        return f"{as_numpy}.astype(\"{dtype}\")"
    return f"torch.from_numpy({as_numpy}.copy())"


def _dtype_arg(tensor: str, dtype: str) -> str:
    return f"torch.{dtype}" if tensor == "torch.tensor" else f'"{dtype}"'
