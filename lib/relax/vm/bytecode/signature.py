"""Signature records: the Relax signature of each function, kept in the executable.

The code generator writes one record per Relax function into the constant pool, as a
string constant (so .vmo, listings and the assembler carry it with no format change):

    relax.signature/1 {"name":"main","params":[{"name":"x","info":SI},...],"ret":SI}

where SI, the struct info of a value, is one of

    {"kind":"tensor","dtype":"float32","shape":[1,"n"]}   shape null and "ndim" when unknown
    {"kind":"shape","values":[2,"n"]}                    or "ndim" (-1: any) instead of values
    {"kind":"prim","dtype":"int64"}                      with "value" when known
    {"kind":"tuple","fields":[SI,...]}
    {"kind":"object"}  {"kind":"func"}

and a dimension is an int, a symbolic variable's name, an expression
["add"|"sub"|"mul"|"floordiv"|"floormod"|"min"|"max", A, B], or null (unknown).
`dtype` "void" means any. The runtime reads the records with `function_signatures`;
only the runtime's side lives here (the compiler side is in codegen.py). A record is
data from the file: one that is not of this form (a key missing, a type wrong, nesting
deeper than MAX_DEPTH, a number beyond 64 bits) is not used, as if it were absent.
"""

from __future__ import annotations

import json
from typing import Any

PREFIX = "relax.signature/1 "
MAX_DEPTH = 64  # nested tuples in a struct info, nested operators in a dimension

_OPERATORS = {
    "add": (" + ", lambda a, b: a + b), "sub": (" - ", lambda a, b: a - b), "mul": (" * ", lambda a, b: a * b),
    "floordiv": (" // ", lambda a, b: a // b), "floormod": (" % ", lambda a, b: a % b),
    "min": ("min", min), "max": ("max", max),
}
OPERATORS = tuple(_OPERATORS)


def encode(name: str, params: list[tuple[str, dict]], ret: dict) -> str:
    record = {"name": name, "params": [{"name": p, "info": info} for p, info in params], "ret": ret}
    return PREFIX + json.dumps(record, separators=(",", ":"), sort_keys=True)


def function_signatures(exe) -> dict[str, dict]:
    """Function name -> record, for every well-formed record in the constant pool."""
    signatures = {}
    for value in exe.constants:
        if isinstance(value, str) and value.startswith(PREFIX):
            try:
                record = json.loads(value[len(PREFIX):])
            except (ValueError, RecursionError):  # not JSON, a number of thousands of digits, deep nesting
                continue
            if well_formed(record):
                signatures[record["name"]] = record
    return signatures


def well_formed(record) -> bool:
    """Whether a decoded record has the form the module docstring gives."""
    if not isinstance(record, dict) or not isinstance(record.get("name"), str):
        return False
    params = record.get("params")
    return (isinstance(params, list) and _info_ok(record.get("ret", {"kind": "object"}), 0)
            and all(isinstance(p, dict) and isinstance(p.get("name"), str) and _info_ok(p.get("info"), 0)
                    for p in params))


def _int_ok(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < 1 << 63


def _dim_ok(dim, depth: int = 0) -> bool:
    if dim is None or isinstance(dim, str) or _int_ok(dim):
        return True
    return (isinstance(dim, list) and len(dim) == 3 and dim[0] in _OPERATORS and depth < MAX_DEPTH
            and _dim_ok(dim[1], depth + 1) and _dim_ok(dim[2], depth + 1))


def _info_ok(info, depth: int) -> bool:
    if not isinstance(info, dict) or depth > MAX_DEPTH or not _int_ok(info.get("ndim", -1)) \
            or not isinstance(info.get("dtype", "void"), str):
        return False
    kind = info.get("kind")
    if kind in ("tensor", "shape"):
        dims = info.get("shape" if kind == "tensor" else "values")
        return dims is None or isinstance(dims, list) and all(_dim_ok(dim) for dim in dims)
    if kind == "prim":
        return _dim_ok(info.get("value"))
    if kind == "tuple":
        fields = info.get("fields", [])
        return isinstance(fields, list) and all(_info_ok(field, depth + 1) for field in fields)
    return kind in ("object", "func")


def is_signature_constant(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


# ---- reading dimensions -----------------------------------------------------------------

def evaluate_dim(dim, bindings: dict[str, int]) -> int | None:
    """The value of a dimension given bound variables; None when something is unbound."""
    if isinstance(dim, int):
        return dim
    if isinstance(dim, str):
        return bindings.get(dim)
    if isinstance(dim, list) and len(dim) == 3 and dim[0] in _OPERATORS:
        a, b = evaluate_dim(dim[1], bindings), evaluate_dim(dim[2], bindings)
        if a is None or b is None or (dim[0] in ("floordiv", "floormod") and b == 0):
            return None
        return _OPERATORS[dim[0]][1](a, b)
    return None


def format_dim(dim) -> str:
    if dim is None:
        return "?"
    if isinstance(dim, (int, str)):
        return str(dim)
    if isinstance(dim, list) and len(dim) == 3 and dim[0] in _OPERATORS:
        symbol = _OPERATORS[dim[0]][0]
        if symbol.strip().isalpha():
            return f"T.{symbol}({format_dim(dim[1])}, {format_dim(dim[2])})"
        return f"{format_dim(dim[1])}{symbol}{format_dim(dim[2])}"
    return "?"


def format_struct_info(info: dict) -> str:
    """TVMScript spelling of a struct info record: R.Tensor((n, 784), dtype="float32")."""
    kind = info.get("kind")
    if kind == "tensor":
        dtype = info.get("dtype", "void")
        parts = []
        if info.get("shape") is not None:
            dims = [format_dim(d) for d in info["shape"]]
            parts.append(f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})")
        if dtype != "void":
            parts.append(f'dtype="{dtype}"')
        if info.get("shape") is None and info.get("ndim", -1) != -1:
            parts.append(f"ndim={info['ndim']}")
        return f"R.Tensor({', '.join(parts)})"
    if kind == "shape":
        if info.get("values") is not None:
            return f"R.Shape([{', '.join(format_dim(d) for d in info['values'])}])"
        return f"R.Shape(ndim={info['ndim']})" if info.get("ndim", -1) != -1 else "R.Shape"
    if kind == "prim":
        if "value" in info:
            return f'R.Prim(value={format_dim(info["value"])}, dtype="{info.get("dtype", "int64")}")'
        return f'R.Prim("{info.get("dtype", "void")}")'
    if kind == "tuple":
        return f"R.Tuple({', '.join(format_struct_info(f) for f in info.get('fields', []))})"
    if kind == "func":
        return "R.Callable"
    return "R.Object"


def format_signature(record: dict) -> str:
    """`main(x: R.Tensor(...), ...) -> R.Tuple(...)`."""
    params = ", ".join(f"{p['name']}: {format_struct_info(p['info'])}" for p in record.get("params", []))
    return f"{record['name']}({params}) -> {format_struct_info(record.get('ret', {'kind': 'object'}))}"
