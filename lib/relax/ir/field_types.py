"""Checks that a value fits a node field's declared type, for loaders of untrusted IR.

The dataclass annotations of the node classes are the schema: `tuple[Expr, ...]`,
`StructInfo | None`, `FrozenDict`, `np.ndarray`. A loader (the JSON reader) asks
`field_type_error(cls, name, value)` before building a node, so a malformed file
gives a message naming the field instead of IR that fails somewhere later.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from functools import lru_cache
from typing import Any

_Check = Callable[[Any], bool]


def _always(value: Any) -> bool:
    return True


def _number(value: Any) -> bool:
    return isinstance(value, (int, float))


def _compile(hint: Any) -> _Check:
    """A predicate for values of the type `hint`; unknown forms accept anything."""
    if hint is Any or hint is object:
        return _always
    if hint is type(None):
        return lambda value: value is None
    if hint is float:
        return _number  # an int where a float is declared (FloatImm(…, 1)) is fine
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [_compile(arg) for arg in typing.get_args(hint)]
        return lambda value: any(check(value) for check in options)
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _compile(args[0])
            return lambda value: isinstance(value, tuple) and all(item(v) for v in value)
        items = [_compile(arg) for arg in args]
        return lambda value: (isinstance(value, tuple) and len(value) == len(items)
                              and all(check(v) for check, v in zip(items, value)))
    if origin is not None:
        return lambda value: isinstance(value, origin)
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return _always


def describe_type(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe_type(arg) for arg in typing.get_args(hint))
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a tuple of {describe_type(args[0])}"
        return "a tuple (" + ", ".join(describe_type(arg) for arg in args) + ")"
    if hint is type(None):
        return "null"
    return getattr(hint, "__name__", str(hint))


def _widened() -> dict[tuple[type, str], Any]:
    """Fields that hold more than their annotation says, with the type they really have."""
    from .expr import GlobalVar
    from .tir_expr import Call

    # A TIR call names an intrinsic by string, or another PrimFunc by its GlobalVar.
    return {(Call, "op"): str | GlobalVar}


@lru_cache(maxsize=None)
def _field_checks(cls: type) -> dict[str, tuple[_Check, Any]]:
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - a class whose annotations do not resolve is not checked
        return {}
    widened = _widened()
    hints = {name: widened.get((cls, name), hint) for name, hint in hints.items()}
    return {name: (_compile(hint), hint) for name, hint in hints.items()}


def field_type_error(cls: type, name: str, value: Any) -> str | None:
    """Why `value` cannot be field `name` of `cls`, or None when it fits."""
    entry = _field_checks(cls).get(name)
    if entry is None or entry[0](value):
        return None
    return f"field '{name}' must be {describe_type(entry[1])}, not {type(value).__name__}"
