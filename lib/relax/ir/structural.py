"""Structural equality and hashing, with bound variables compared up to renaming.

Both rest on one walk that writes a node out as a flat list of tokens in which
every bound variable is replaced by the number of its definition (de Bruijn-like
levels): two nodes are structurally equal exactly when their token lists are, and
the hash is a digest of the list. The walk is linear in the size of the IR.

What counts as a definition (registry.DEFINITION_FIELDS): Relax variables bound by
function parameters, bindings and match_cast; TIR variables bound by PrimFunc
parameters, loops, lets, block iterators and allocate; buffers declared by a
buffer_map, alloc_buffers, match_buffers or DeclBuffer (a buffer used without a
declaration is declared where it first appears). A symbolic variable (a TIR Var
in struct info or in a declared buffer's shape) is defined at its first occurrence
in a definition's struct info: a parameter, a binding's variable, a match_cast.

A TIR variable first seen in an attribute dict (T.index_map's lambda parameters)
is defined there. Names of variables and buffers are ignored; GlobalVars and Ops compare by name;
Constants by dtype, shape and bytes (NaN equals NaN); floats exactly (0.0 is not
-0.0); FrozenDicts by keys and values, in any order; spans never. A variable used
but not defined is compared by identity, or, with `map_free_vars=True`, mapped to
the other side's on first occurrence (consistently thereafter).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from . import expr as rx
from . import struct_info as si
from . import tir_expr as tir
from .node import FrozenDict, Node, field_names
from .registry import definition_fields, key_of, scoped_field_order

_VARIABLE_TYPES = (rx.Var, tir.Var)
# Nodes inside which a first-seen TIR variable may be a definition (see symbol_definitions).
_SYMBOLIC_CONTEXTS = (si.StructInfo, rx.ShapeExpr, tir.PrimExpr, tir.Range)


class _Tokens:
    """Writes nodes as canonical tokens; `marks` (when kept) locate each token."""

    def __init__(self, map_free_vars: bool, keep_marks: bool = False):
        self.map_free_vars = map_free_vars
        self.tokens: list[Any] = []
        self.numbers: dict[int, int] = {}  # id(variable or buffer) -> definition number
        self.alive: list[Node] = []  # keeps numbered objects alive so ids stay unique
        self.defining_symbols = False
        self.marks: list[tuple[int, tuple[str, ...], Any]] | None = [] if keep_marks else None
        self.path: list[str] = []
        self.owners: list[Node] = []

    # -- bookkeeping for assert_structural_equal's report -----------------------------

    def _mark(self) -> None:
        self.marks.append((len(self.tokens), tuple(self.path), self.owners[-1] if self.owners else None))

    def _push(self, segment: str) -> None:
        if self.marks is not None:
            self.path.append(segment)
            self._mark()

    def _pop(self) -> None:
        if self.marks is not None:
            self.path.pop()
            self._mark()

    def _enter(self, node: Node) -> None:
        if self.marks is not None:
            self.owners.append(node)
            self._mark()

    def _leave(self) -> None:
        if self.marks is not None:
            self.owners.pop()
            self._mark()

    # -- values ---------------------------------------------------------------------

    def value(self, value: Any) -> None:
        if isinstance(value, Node):
            self.node(value)
        elif isinstance(value, tuple):
            self.sequence("tuple", value)
        elif isinstance(value, FrozenDict):
            # An attribute may bind TIR variables of its own (T.index_map's lambda
            # parameters), so one first seen there is defined there.
            saved, self.defining_symbols = self.defining_symbols, True
            self.mapping("dict", value)
            self.defining_symbols = saved
        else:
            self.leaf(value)

    def sequence(self, tag: str, items, define: bool = False) -> None:
        self.tokens += (tag, len(items))
        for index, item in enumerate(items):
            self._push(f"[{index}]")
            if define:
                self.definitions(item)
            else:
                self.value(item)
            self._pop()

    def mapping(self, tag: str, items) -> None:
        # Keys are sorted so that insertion order does not matter, as with dicts.
        keys = sorted(items, key=lambda key: (type(key).__name__, repr(key)))
        self.tokens += (tag, len(keys))
        for key in keys:
            self.leaf(key)
            self._push(f"[{key!r}]")
            self.value(items[key])
            self._pop()

    def leaf(self, value: Any) -> None:
        if value is None or isinstance(value, (bool, str)):
            self.tokens += (type(value).__name__, value)
        elif isinstance(value, int):
            self.tokens += ("int", value)
        elif isinstance(value, float):
            self.tokens += ("float", repr(value))
        elif isinstance(value, np.ndarray):
            self.tokens += ("array",) + _array_identity(value)
        elif isinstance(value, np.generic):
            self.tokens += ("array",) + _array_identity(np.asarray(value))
        elif isinstance(value, list):
            self.sequence("list", value)
        elif isinstance(value, dict):
            self.mapping("pydict", value)
        else:
            self.tokens += ("object", type(value).__name__, repr(value))

    # -- nodes ----------------------------------------------------------------------

    def node(self, node: Node) -> None:
        self._enter(node)
        saved = self.defining_symbols
        if saved and not isinstance(node, _SYMBOLIC_CONTEXTS):
            # Only struct info and the expressions inside it define symbols; a
            # function held in a dict (IRModule.functions) starts afresh.
            self.defining_symbols = False
        if isinstance(node, _VARIABLE_TYPES):
            self.variable_use(node)
        elif isinstance(node, tir.Buffer):
            self.buffer_use(node)
        elif isinstance(node, rx.MatchCast):
            self.match_cast(node)
        else:
            self.fields(node)
        self.defining_symbols = saved
        self._leave()

    def fields(self, node: Node, skip: tuple[str, ...] = ()) -> None:
        cls = type(node)
        self.tokens.append(key_of(cls))
        defined = definition_fields(cls)
        for name in scoped_field_order(cls):
            if name in skip:
                continue
            self._push("." + name)
            if name in defined:
                self.definitions(getattr(node, name))
            else:
                self.value(getattr(node, name))
            self._pop()

    def match_cast(self, node: rx.MatchCast) -> None:
        self.tokens.append(key_of(type(node)))
        self._push(".var")
        self.definitions(node.var)
        self._pop()
        self._push(".value")
        self.value(node.value)
        self._pop()
        self._push(".struct_info")
        self.symbol_definitions(node.struct_info)
        self._pop()

    def symbol_definitions(self, value: Any) -> None:
        """Walks `value` defining the symbolic variables that first appear in it."""
        saved, self.defining_symbols = self.defining_symbols, True
        self.value(value)
        self.defining_symbols = saved

    def definitions(self, value: Any) -> None:
        if isinstance(value, _VARIABLE_TYPES):
            self._enter(value)
            self.define_variable(value)
            self._leave()
        elif isinstance(value, tir.Buffer):
            self._enter(value)
            self.define_buffer(value)
            self._leave()
        elif isinstance(value, tuple):
            self.sequence("tuple", value, define=True)
        else:
            self.value(value)

    def _number(self, obj: Node) -> int:
        number = len(self.numbers)
        self.numbers[id(obj)] = number
        self.alive.append(obj)
        return number

    def _variable_header(self, var: Node, tag: str) -> None:
        self.tokens += (tag, key_of(type(var)))
        if isinstance(var, tir.Var):
            self.tokens.append(var.dtype)

    def define_variable(self, var: Node) -> None:
        number = self.numbers.get(id(var))
        if number is not None:  # defined before (a PrimFunc parameter in buffer_map)
            self.tokens += ("use", number)
            return
        self._variable_header(var, "def")
        self.tokens.append(self._number(var))
        if isinstance(var, rx.Var):
            self._push(".struct_info")
            self.symbol_definitions(var.struct_info)
            self._pop()

    def variable_use(self, var: Node) -> None:
        number = self.numbers.get(id(var))
        if number is not None:
            self.tokens += ("use", number)
        elif self.defining_symbols and isinstance(var, tir.Var):
            self.define_variable(var)
        elif self.map_free_vars:
            self._variable_header(var, "free")
            self.tokens.append(self._number(var))
            if isinstance(var, rx.Var):
                self.value(var.struct_info)
        else:
            self.tokens += ("free", id(var))

    def define_buffer(self, buffer: tir.Buffer) -> None:
        number = self.numbers.get(id(buffer))
        if number is not None:
            self.tokens += ("buffer", number)
            return
        self.tokens += ("buffer-def", self._number(buffer))
        saved, self.defining_symbols = self.defining_symbols, True
        self.fields(buffer, skip=("name",))
        self.defining_symbols = saved

    def buffer_use(self, buffer: tir.Buffer) -> None:
        self.define_buffer(buffer)


def _array_identity(array: np.ndarray) -> tuple[str, tuple[int, ...], str]:
    """dtype, shape and a digest of the bytes, with every NaN made the same NaN."""
    if array.dtype.kind in "fc" and np.isnan(array).any():
        array = np.where(np.isnan(array), np.array(np.nan, dtype=array.dtype), array)
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False)
    digest = hashlib.blake2b(memoryview(data.reshape(-1).view(np.uint8)), digest_size=16).hexdigest()  # no copy of a weight
    return str(array.dtype), tuple(int(d) for d in array.shape), digest


def _tokens(node: Any, map_free_vars: bool, keep_marks: bool = False) -> _Tokens:
    writer = _Tokens(map_free_vars, keep_marks)
    writer.value(node)
    return writer


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Whether `lhs` and `rhs` have the same structure, bound variables up to renaming."""
    if lhs is rhs:
        return True
    return _tokens(lhs, map_free_vars).tokens == _tokens(rhs, map_free_vars).tokens


def structural_key(node: Any, map_free_vars: bool = False) -> list:
    """What structural_equal compares: two nodes are structurally equal exactly when their
    keys are equal (`==`). A caller comparing one node with many keeps their keys rather
    than reading each node again per comparison."""
    return _tokens(node, map_free_vars).tokens


def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """A 64-bit hash, the same for structurally equal nodes and across runs.

    Free variables hash by their order of first occurrence, which is consistent
    with equality in both modes (identical objects occur in identical order).
    """
    tokens = _tokens(node, map_free_vars=True).tokens
    digest = hashlib.blake2b(repr(tokens).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _first_difference(lhs: list, rhs: list) -> int:
    for index, (left, right) in enumerate(zip(lhs, rhs)):
        if left != right:
            return index
    return min(len(lhs), len(rhs))


def _locate(writer: _Tokens, token: int) -> tuple[str, Any]:
    """The path and innermost node (or value) that wrote token number `token`."""
    path: tuple[str, ...] = ()
    owner: Any = None
    for start, mark_path, mark_owner in writer.marks:
        if start > token:
            break
        path, owner = mark_path, mark_owner
    return "root" + "".join(path), owner


def _show(value: Any) -> str:
    if isinstance(value, Node):
        try:
            from ..script import script

            return script(value).rstrip()
        except Exception:  # noqa: BLE001 - a report must not fail on a half-built node
            pass
        fields = ", ".join(f"{name}={getattr(value, name)!r}" for name in field_names(type(value)))
        return f"{type(value).__name__}({fields})"
    return repr(value)


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raises AssertionError naming the path of the first difference, both sides printed."""
    if structural_equal(lhs, rhs, map_free_vars):
        return
    left = _tokens(lhs, map_free_vars, keep_marks=True)
    right = _tokens(rhs, map_free_vars, keep_marks=True)
    index = _first_difference(left.tokens, right.tokens)
    path, left_owner = _locate(left, index)
    _, right_owner = _locate(right, index)
    raise AssertionError(
        f"structural mismatch at {path}: {_excerpt(left.tokens, index)} vs {_excerpt(right.tokens, index)}\n"
        f"lhs:\n{_indent(_show(left_owner))}\nrhs:\n{_indent(_show(right_owner))}\n"
        f"whole lhs:\n{_indent(_show(lhs))}\nwhole rhs:\n{_indent(_show(rhs))}"
    )


def _excerpt(tokens: list, index: int) -> str:
    """The differing token with the two before it, which say what it is."""
    shown = [repr(token) for token in tokens[max(0, index - 2):index + 1]]
    if index >= len(tokens):
        shown.append("<end>")
    return "(" + " ".join(shown) + ")"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
