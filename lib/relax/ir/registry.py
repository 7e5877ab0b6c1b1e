"""The table of IR node classes, built once from the ir modules.

Serialization names every node class by a stable key: Relax expressions, struct
info and the module by their class name ("Var", "TensorStructInfo", "IRModule"),
TIR nodes with a "tir." prefix ("tir.Var", "tir.For"), since both languages have a
`Var`, a `Call` and a `StringImm`. The JSON loader finds classes only through this
table, so a file can never name an arbitrary Python object.

The table also says where variables are *defined* (as opposed to used): the fields
of a few binding constructs. Scoped walks (structural equality, free variables,
the well-formedness checker) read it instead of repeating it.
"""

from __future__ import annotations

import sys
from functools import lru_cache

from . import expr, module, struct_info, tir_expr, tir_stmt
from .node import Node, field_names

# `relax.ir.node` is shadowed by the `node` decorator the package exports.
_node_module = sys.modules[Node.__module__]
_RELAX_MODULES = (_node_module, expr, struct_info, module)
_TIR_MODULES = (tir_expr, tir_stmt)


def _classes_of(mod) -> list[type]:
    return [
        value for value in vars(mod).values()
        if isinstance(value, type) and issubclass(value, Node) and value.__module__ == mod.__name__
    ]


def _build() -> dict[str, type]:
    table: dict[str, type] = {}
    for mod in _RELAX_MODULES:
        for cls in _classes_of(mod):
            table[cls.__name__] = cls
    for mod in _TIR_MODULES:
        for cls in _classes_of(mod):
            table["tir." + cls.__name__] = cls
    return table


NODE_CLASSES: dict[str, type] = _build()
"""Every IR node class by its serialization key."""

_KEY_OF: dict[type, str] = {cls: key for key, cls in NODE_CLASSES.items()}


def is_tir_class(cls: type) -> bool:
    return cls.__module__ in (tir_expr.__name__, tir_stmt.__name__)


def key_of(cls: type) -> str:
    """The serialization key of a node class: "Var", "tir.Var", and for a node class
    defined elsewhere in the project (a parser's attribute value) its dotted path."""
    key = _KEY_OF.get(cls)
    if key is None:
        if not (issubclass(cls, Node) and cls.__module__.startswith("relax.")):
            raise KeyError(f"{cls.__name__} is not an IR node class of the project")
        key = _KEY_OF[cls] = f"{cls.__module__}.{cls.__qualname__}"
    return key


def class_of(key: str) -> type | None:
    """The node class of a serialization key, or None.

    Besides the IR's own classes, a project node class that is already loaded is
    found by its dotted path among the subclasses of Node; nothing is imported.
    """
    cls = NODE_CLASSES.get(key)
    if cls is not None or not key.startswith("relax."):
        return cls
    pending = [Node]
    while pending:
        candidate = pending.pop()
        if f"{candidate.__module__}.{candidate.__qualname__}" == key:
            return candidate
        pending.extend(candidate.__subclasses__())
    return None


@lru_cache(maxsize=None)
def visitor_method_names(cls: type) -> tuple[str, ...]:
    """The `visit_*` method names that may handle `cls`, most specific first.

    For each class of the MRO: a TIR class answers to `visit_tir_<Name>`, and also
    to `visit_<Name>` when no Relax class has that name (so `visit_BinaryOp` catches
    `tir.Add` but `visit_Var` never sees a `tir.Var`).
    """
    relax_names = {c.__name__ for k, c in NODE_CLASSES.items() if not k.startswith("tir.")}
    names: list[str] = []
    for base in cls.__mro__:
        if not (isinstance(base, type) and issubclass(base, Node)):
            continue
        if is_tir_class(base):
            names.append("visit_tir_" + base.__name__)
            if base.__name__ not in relax_names:
                names.append("visit_" + base.__name__)
        else:
            names.append("visit_" + base.__name__)
    return tuple(names)


# Fields whose values are variables (or buffers) being defined, per node class.
# Everything else a node holds is a use. Subclasses inherit their base's entry.
DEFINITION_FIELDS: dict[type, tuple[str, ...]] = {
    expr.Function: ("params",),
    expr.VarBinding: ("var",),
    expr.MatchCast: ("var",),
    tir_expr.Let: ("var",),
    tir_expr.IterVar: ("var",),
    tir_stmt.For: ("loop_var",),
    tir_stmt.LetStmt: ("var",),
    tir_stmt.Allocate: ("buffer_var",),
    tir_stmt.DeclBuffer: ("buffer",),
    tir_stmt.Block: ("alloc_buffers",),
    tir_stmt.MatchBufferRegion: ("buffer",),
    tir_stmt.PrimFunc: ("params", "buffer_map"),
}

# Fields visited before the others so that definitions precede their uses in a
# walk: a Block's body reads buffers its later fields allocate, and a PrimFunc's
# buffer_map (declared after the body) defines the buffers the body uses.
_VISIT_FIRST: dict[type, tuple[str, ...]] = {
    tir_stmt.Block: ("iter_vars", "alloc_buffers", "match_buffers"),
    tir_stmt.PrimFunc: ("params", "buffer_map"),
}


def _lookup(table: dict[type, tuple[str, ...]], cls: type) -> tuple[str, ...]:
    for base in cls.__mro__:
        if base in table:
            return table[base]
    return ()


@lru_cache(maxsize=None)
def definition_fields(cls: type) -> frozenset[str]:
    return frozenset(_lookup(DEFINITION_FIELDS, cls))


@lru_cache(maxsize=None)
def scoped_field_order(cls: type) -> tuple[str, ...]:
    """The fields of `cls` in an order where definitions come before their uses."""
    first = _lookup(_VISIT_FIRST, cls)
    return first + tuple(name for name in field_names(cls) if name not in first)
