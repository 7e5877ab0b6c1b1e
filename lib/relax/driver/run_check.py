"""Binding `--input` arrays to a function's parameters and checking them, before anything runs.

Parameters are flattened into leaves: a tensor, shape or prim parameter is one leaf
named after it; a tuple parameter `t` gives leaves `t.0`, `t.1.0`, ... depth first.
Named inputs bind their leaf; the others fill the remaining leaves in order. Every
leaf is then checked against its struct info (dtype, rank, sizes; symbolic sizes are
bound at their first occurrence and must agree everywhere after), and only then made
into what the VM holds (so an inline splat is allocated only now, run_inputs.py): a
tensor stays an array, a shape becomes a ShapeTuple (from a 1-D integer array), a
prim value a Python scalar (from a 0-d array), a tuple a tuple.
"""

from __future__ import annotations

import numpy as np

from ..diagnostics import UserError
from ..records import record
from ..runtime.dtype import DataType, dtype_name
from ..runtime.objects import ShapeTuple
from ..vm.bytecode.signature import evaluate_dim, format_dim, format_struct_info
from .run_inputs import Supplied, materialize, type_spec

ANY = {"kind": "object"}
MAX_SHAPE_VALUES = 1 << 16  # a ShapeTuple holds Python ints: about 40 bytes each


@record
class Leaf:
    name: str          # "x", "t.0"
    param: str         # the parameter it belongs to
    info: dict         # its struct info record


def leaves_of(name: str, info: dict, param: str | None = None) -> list[Leaf]:
    param = param or name
    if info.get("kind") == "tuple":
        return [leaf for index, field in enumerate(info.get("fields", []))
                for leaf in leaves_of(f"{name}.{index}", field, param)]
    return [Leaf(name, param, info)]


def parameters(record: dict | None, param_names: tuple[str, ...], num_args: int) -> list[tuple[str, dict]]:
    """(name, struct info) per parameter: from the signature record, else names only."""
    if record is not None:
        return [(p["name"], p["info"]) for p in record["params"]]
    names = list(param_names) or [f"arg{i}" for i in range(num_args)]
    return [(name, ANY) for name in names]


def bind_inputs(func: str, params: list[tuple[str, dict]], supplied: list[Supplied]) -> list:
    """The VM arguments of `func` for the supplied arrays; a UserError tells what is wrong."""
    leaves = [leaf for name, info in params for leaf in leaves_of(name, info)]
    bound = _assign(func, params, leaves, supplied)
    checker = _Checker(func)
    for leaf in leaves:
        checker.leaf(leaf, bound[leaf.name])
    checker.finish()
    values = {leaf.name: _value(leaf, bound[leaf.name]) for leaf in leaves}
    return [_assemble(name, info, values) for name, info in params]


def _value(leaf: Leaf, item: Supplied):
    """What the VM holds for a checked leaf: an array, a ShapeTuple or a scalar."""
    kind = leaf.info.get("kind")
    if kind == "shape":
        return ShapeTuple(int(v) for v in item.value)
    if kind == "prim":
        return item.value.item()
    return materialize(item)


def _assign(func: str, params, leaves: list[Leaf], supplied: list[Supplied]) -> dict[str, Supplied]:
    by_name = {leaf.name: leaf for leaf in leaves}
    bound: dict[str, Supplied] = {}
    positional = []
    for item in supplied:
        if item.name is None:
            positional.append(item)
            continue
        if item.name not in by_name:
            if item.origin.endswith(f"(array '{item.name}')") and item.name.startswith("arr_"):
                positional.append(item)  # np.savez without names: positional
                continue
            raise UserError(f"{item.origin}: function '{func}' has no parameter '{item.name}' "
                            f"(parameters: {_names(params)})")
        if item.name in bound:
            raise UserError(f"{item.origin}: parameter '{item.name}' is already given by {bound[item.name].origin}")
        bound[item.name] = item
    free = [leaf for leaf in leaves if leaf.name not in bound]
    if len(positional) > len(free):
        extra = positional[len(free)]
        raise UserError(f"function '{func}' takes {len(leaves)} input(s) ({_names(params)}), got "
                        f"{len(supplied)}: {extra.origin} is one too many")
    if len(positional) < len(free):
        missing = ", ".join(f"'{leaf.name}' ({format_struct_info(leaf.info)})" for leaf in free[len(positional):])
        raise UserError(f"function '{func}' takes {len(leaves)} input(s), got {len(supplied)}: "
                        f"no --input for {missing}")
    bound.update({leaf.name: item for leaf, item in zip(free, positional)})
    return bound


def _names(params) -> str:
    return ", ".join(name for name, _ in params) or "none"


def _assemble(name: str, info: dict, values: dict):
    if info.get("kind") == "tuple":
        return tuple(_assemble(f"{name}.{i}", field, values) for i, field in enumerate(info.get("fields", [])))
    return values[name]


class _Checker:
    """Checks leaves one by one, binding symbolic sizes; expressions are checked at the end."""

    def __init__(self, func: str):
        self.func = func
        self.bindings: dict[str, int] = {}
        self.bound_at: dict[str, str] = {}
        self.deferred: list = []

    def fail(self, leaf: Leaf, item: Supplied, problem: str):
        raise UserError(f"function '{self.func}', parameter '{leaf.name}': expected "
                        f"{format_struct_info(leaf.info)}, got {type_spec(item.value)} from {item.origin}: {problem}")

    def leaf(self, leaf: Leaf, item: Supplied) -> None:
        check = {"tensor": self.tensor, "shape": self.shape, "prim": self.prim}.get(leaf.info.get("kind"))
        if check is not None:
            check(leaf, item)

    def tensor(self, leaf: Leaf, item: Supplied):
        array, info = item.value, leaf.info
        dtype = info.get("dtype", "void")
        if dtype != "void" and array.dtype != _np_dtype(dtype):
            self.fail(leaf, item, f"element type {_dtype_name(array)}, expected {dtype}")
        dims = info.get("shape")
        ndim = len(dims) if dims is not None else info.get("ndim", -1)
        if ndim != -1 and array.ndim != ndim:
            self.fail(leaf, item, f"rank {array.ndim}, expected {ndim}")
        for axis, dim in enumerate(dims or ()):
            self.dim(leaf, item, f"shape[{axis}]", dim, array.shape[axis])

    def shape(self, leaf: Leaf, item: Supplied):
        array = item.value
        if array.ndim != 1 or array.dtype.kind not in "iu":
            self.fail(leaf, item, "a shape is given as a 1-D integer array (e.g. 2xi64=3,4)")
        if array.shape[0] > MAX_SHAPE_VALUES:
            self.fail(leaf, item, f"a shape of {array.shape[0]} values (at most {MAX_SHAPE_VALUES})")
        values = leaf.info.get("values")
        ndim = len(values) if values is not None else leaf.info.get("ndim", -1)
        if ndim != -1 and array.shape[0] != ndim:
            self.fail(leaf, item, f"{array.shape[0]} values, expected {ndim}")
        for axis, dim in enumerate(values or ()):
            self.dim(leaf, item, f"value[{axis}]", dim, int(array[axis]))

    def prim(self, leaf: Leaf, item: Supplied):
        array, dtype = item.value, leaf.info.get("dtype", "void")
        if array.ndim != 0:
            self.fail(leaf, item, "a prim value is given as a 0-d array (e.g. i64=3)")
        expected = _np_dtype(dtype)
        if dtype != "void" and (expected is None or array.dtype.kind != expected.kind):
            self.fail(leaf, item, f"element type {_dtype_name(array)}, expected {dtype}")
        if "value" in leaf.info:
            self.dim(leaf, item, "value", leaf.info["value"], int(array.item()))

    def dim(self, leaf: Leaf, item: Supplied, where: str, dim, actual: int) -> None:
        if dim is None:
            return
        if isinstance(dim, str) and dim not in self.bindings:
            self.bindings[dim] = actual
            self.bound_at[dim] = f"{leaf.name} {where}"
            return
        expected = evaluate_dim(dim, self.bindings)
        if expected is None:
            self.deferred.append((leaf, item, where, dim, actual))
        elif expected != actual:
            self.fail(leaf, item, self._mismatch(where, dim, expected, actual))

    def _mismatch(self, where: str, dim, expected: int, actual: int) -> str:
        if isinstance(dim, str):
            return f"{where} is {actual}, but {dim} = {expected} (from {self.bound_at[dim]})"
        if isinstance(dim, list):
            return f"{where} is {actual}, expected {format_dim(dim)} = {expected}"
        return f"{where} is {actual}, expected {expected}"

    def finish(self) -> None:
        for leaf, item, where, dim, actual in self.deferred:
            expected = evaluate_dim(dim, self.bindings)
            if expected is not None and expected != actual:
                self.fail(leaf, item, self._mismatch(where, dim, expected, actual))


def _np_dtype(dtype: str) -> np.dtype | None:
    parsed = DataType.parse_or_none(dtype)
    return parsed.numpy if parsed is not None and parsed.has_numpy else None


def _dtype_name(array: np.ndarray) -> str:
    return dtype_name(array)
