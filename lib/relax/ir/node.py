"""The base of every IR node: an immutable dataclass with a source span.

Nodes compare and hash by identity, as TVM's object references do: two `Var("x")`
are different variables. Equality of structure (up to renaming of bound variables)
is `relax.ir.structural_equal`, kept in one place.

Traversal is derived from the dataclass fields once per node type
(`child_fields`), so visitors and mutators never list a node's children by hand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from ..diagnostics import Span
from ..records import init_function, refuse_delattr, refuse_setattr

NodeT = TypeVar("NodeT", bound="Node")


def node(cls: type[NodeT]) -> type[NodeT]:
    """Declares an IR node class: immutable, identity-compared, with a kw-only `span`.

    A dataclass to `dataclasses.fields` and `dataclasses.replace`, but only the fields are
    left to the dataclasses module, which would compile an __init__, __setattr__ and
    __delattr__ from source text for every class, at every start of every tool. Node's
    own __setattr__ and __delattr__ refuse changes for all node classes, and each
    __init__ runs a code object shared by the classes whose fields have the same names
    (records.init_function)."""
    if cls.__dict__.get("__doc__") is None:
        cls.__doc__ = cls.__name__  # else dataclasses spells out a signature, through inspect
    cls = dataclasses.dataclass(init=False, eq=False, repr=False)(cls)
    fields = dataclasses.fields(cls)
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: a node field takes a default value, not a factory")
    cls.__init__ = init_function(cls, fields, store="dict")
    return cls


@node
class Node:
    span: Span | None = dataclasses.field(default=None, kw_only=True)

    __setattr__, __delattr__ = refuse_setattr, refuse_delattr

    def with_fields(self: NodeT, **changes: Any) -> NodeT:
        """A copy with some fields replaced (the span is kept unless given)."""
        fields = _copyable_fields(self.__class__)
        if fields is None or not changes.keys() <= fields[1]:
            return dataclasses.replace(self, **changes)  # runs __post_init__; reports a wrong name
        # The passes rebuild nodes by the thousand: the fields copied directly, without
        # dataclasses.replace's per-call inspection of the class.
        copy = object.__new__(self.__class__)
        state, old = copy.__dict__, self.__dict__
        for name in fields[0]:
            state[name] = changes[name] if name in changes else old[name]
        return copy

    def script(self) -> str:
        """This node as TVMScript text."""
        from ..script.printer import script

        return script(self)

    def __repr__(self) -> str:
        try:
            text = self.script()
        except Exception:  # noqa: BLE001 - repr must never fail, even on a half-built node
            text = None
        if text is not None and "\n" not in text.strip() and len(text) < 120:
            return f"{type(self).__name__}({text.strip()})"
        fields = ", ".join(f.name for f in dataclasses.fields(self) if f.name != "span")
        return f"<{type(self).__name__} {fields}>"


_FIELD_CACHE: dict[type, tuple[str, ...]] = {}
_COPYABLE: dict[type, tuple | None] = {}


def _copyable_fields(cls: type):
    """(names, set of names) of every field of a node type that with_fields may copy
    directly, or None when construction does more than store them (a __post_init__)."""
    if cls not in _COPYABLE:
        fields = dataclasses.fields(cls)
        plain = not hasattr(cls, "__post_init__") and all(f.init for f in fields)
        names = tuple(f.name for f in fields)
        _COPYABLE[cls] = (names, frozenset(names)) if plain else None
    return _COPYABLE[cls]


def field_names(cls: type) -> tuple[str, ...]:
    """The names of a node type's fields, without `span`, in declaration order."""
    names = _FIELD_CACHE.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name != "span")
        _FIELD_CACHE[cls] = names
    return names


# Field types no node is ever below (a name, a dtype, a lane count): the walks that look
# for nodes leave such fields out (testsuite/tir/test_plain_fields.py checks the declarations).
PLAIN_FIELD_TYPES = frozenset({"str", "int", "float", "bool", "str | None", "int | None",
                               "tuple[str, ...]", "tuple[int, ...]", str, int, float, bool})
_NODE_FIELD_CACHE: dict[type, tuple[str, ...]] = {}


def node_field_names(cls: type) -> tuple[str, ...]:
    """field_names(cls) less the fields declared of a PLAIN_FIELD_TYPES type."""
    names = _NODE_FIELD_CACHE.get(cls)
    if names is None:
        plain = {f.name for f in dataclasses.fields(cls) if f.type in PLAIN_FIELD_TYPES}
        names = _NODE_FIELD_CACHE[cls] = tuple(name for name in field_names(cls) if name not in plain)
    return names


def field_values(obj: Node) -> Iterator[tuple[str, Any]]:
    for name in field_names(type(obj)):
        yield name, getattr(obj, name)


class FrozenDict(Mapping):
    """An immutable, insertion-ordered mapping for attributes of functions and calls."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping | tuple | list | None = None, **kwargs: Any):
        data = dict(items or {}, **kwargs)
        object.__setattr__(self, "_items", data)

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __setattr__(self, name, value):
        raise AttributeError("FrozenDict is immutable")

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __eq__(self, other) -> bool:
        if isinstance(other, FrozenDict):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenDict({self._items!r})"

    def updated(self, **changes: Any) -> "FrozenDict":
        return FrozenDict({**self._items, **changes})

    def without(self, *keys: str) -> "FrozenDict":
        return FrozenDict({k: v for k, v in self._items.items() if k not in keys})


EMPTY = FrozenDict()
