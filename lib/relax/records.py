"""Value classes: `@record` is `@dataclass(frozen=True)` without methods compiled per class.

For every frozen dataclass, the dataclasses module builds the source text of an
__init__, __repr__, __eq__, __hash__, __setattr__ and __delattr__ and compiles each
one, at every start of every tool (a plain dataclass: __init__, __repr__ and __eq__),
for some ninety classes here. A record leaves dataclasses only the fields (so
`dataclasses.fields`, `replace` and `asdict` work as before) and gets the same
behaviour from shared functions: one __setattr__ and __delattr__ that refuse, an __eq__
and __hash__ over the tuple of fields (the one a dataclass compares and hashes), the
same repr, and an __init__ whose code object is shared by the records with the same
field names (`init_function`) and stores the fields as the dataclass would. Methods
the class body defines are kept, as dataclasses keeps them. `@record(mutable=True)`
stands for a plain `@dataclass` the same way.

IR nodes (ir/node.py) are identity-compared and have their own decorator; they share
`init_function`.
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib
import types
from typing import Any, Callable

# The default of a parameter whose field has a default_factory: the factory is called.
_FACTORY = object()


def record(cls: type | None = None, /, *, eq: bool = True, mutable: bool = False):
    """Declares a value class: `@record` is immutable and compares by fields,
    `@record(eq=False)` compares and hashes by identity, and `@record(mutable=True)` is
    `@dataclass`'s plain class (compared by fields and unhashable, unless eq=False)."""

    def declare(cls: type) -> type:
        if not mutable:
            for name in ("__setattr__", "__delattr__"):
                if name in cls.__dict__:
                    raise TypeError(f"{cls.__name__}: a record cannot define {name}")
        if cls.__dict__.get("__doc__") is None:
            cls.__doc__ = cls.__name__  # else dataclasses spells out a signature, through inspect
        cls = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
        fields = dataclasses.fields(cls)
        if "__init__" not in cls.__dict__:
            cls.__init__ = init_function(cls, fields, "assign" if mutable else "object")
        if not mutable:
            cls.__setattr__, cls.__delattr__ = refuse_setattr, refuse_delattr
        if "__repr__" not in cls.__dict__:
            cls._record_shown = tuple(f.name for f in fields if f.repr)
            cls.__repr__ = _repr
        if eq:
            _equal_by_fields(cls, fields, hashable=not mutable)
        return cls

    return declare if cls is None else declare(cls)


def _equal_by_fields(cls: type, fields, hashable: bool) -> None:
    """__eq__ over the fields' tuple, and __hash__ over it too (`hashable`) or None, as a
    dataclass has them; an __eq__ or __hash__ of the class body is kept."""
    cls._record_key = staticmethod(_field_tuple(tuple(f.name for f in fields if f.compare)))
    own_eq, own_hash = "__eq__" in cls.__dict__, cls.__dict__.get("__hash__", dataclasses.MISSING)
    if not own_eq:
        cls.__eq__ = _eq
    if own_hash is dataclasses.MISSING or (own_hash is None and own_eq):
        # A body's __eq__ sets __hash__ to None: a dataclass replaces that None as well.
        cls.__hash__ = _hash if hashable else None


def _field_tuple(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """A function of an instance to the tuple of these fields (always a tuple, so the hash
    is a dataclass's)."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        get = operator.attrgetter(names[0])
        return lambda self: (get(self),)
    return lambda self: ()


def _eq(self, other) -> bool:
    if other.__class__ is self.__class__:
        return self._record_key(self) == other._record_key(other)
    return NotImplemented


def _hash(self) -> int:
    return hash(self._record_key(self))


@reprlib.recursive_repr()  # a record that holds itself shows "...", as a dataclass's repr does
def _repr(self) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._record_shown)
    return f"{self.__class__.__qualname__}({shown})"


def refuse_setattr(self, name: str, value: Any) -> None:
    """The __setattr__ of an immutable class (records, IR nodes)."""
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def refuse_delattr(self, name: str) -> None:
    """The __delattr__ of an immutable class (records, IR nodes)."""
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def init_function(cls: type, fields, store: str) -> types.FunctionType:
    """The __init__ of a record or node class: stores each field (positional ones first,
    then keyword-only ones), calls a field's default_factory when its argument is left
    out, then calls __post_init__ if the class has one.

    `store` says how: "assign" (`self.name = value`, a mutable class), "object"
    (object.__setattr__, past a frozen class's own, as a frozen dataclass stores), or
    "dict" (straight into the instance's __dict__: the cheapest to build, but reading
    __dict__ turns CPython's compact per-instance values into a dict whose attributes
    read slower, which IR nodes, rebuilt far more than read, accept)."""
    fields = [f for f in fields if f.init]
    positional = [f for f in fields if not f.kw_only]
    keyword = [f for f in fields if f.kw_only]
    factories = {f.name: f.default_factory for f in fields if f.default_factory is not dataclasses.MISSING}
    defaults = []
    for f in positional:
        default = _parameter_default(f)
        if default is not dataclasses.MISSING:
            defaults.append(default)
        elif defaults:
            raise TypeError(f"{cls.__name__}: field '{f.name}' without a default follows one with a default")
    code = _init_code(tuple(f.name for f in positional), tuple(f.name for f in keyword),
                      tuple(sorted(factories)), hasattr(cls, "__post_init__"), store)
    names = {"_FACTORY": _FACTORY, "_factories": factories, "_setattr": object.__setattr__}
    function = types.FunctionType(code, names, "__init__", tuple(defaults) or None)
    keyword_defaults = {f.name: _parameter_default(f) for f in keyword
                        if _parameter_default(f) is not dataclasses.MISSING}
    function.__kwdefaults__ = keyword_defaults or None
    function.__qualname__ = f"{cls.__qualname__}.__init__"
    return function


def _parameter_default(f: dataclasses.Field):
    """The default of field `f`'s __init__ parameter: _FACTORY for a default_factory, else
    its default (MISSING if it has none)."""
    return _FACTORY if f.default_factory is not dataclasses.MISSING else f.default


# How each `store` of init_function writes field `name` (the value in `{value}`).
_STORES = {"assign": "self.{name} = {value}", "object": "_setattr(self, {name!r}, {value})",
           "dict": "state[{name!r}] = {value}"}


_INIT_CODES: dict[tuple, types.CodeType] = {}
# Per shape (how many positional and keyword fields, which have factories, __post_init__,
# store): one compiled __init__ with placeholder names, which each field list renames.
_INIT_TEMPLATES: dict[tuple, types.CodeType] = {}
_TEMPLATE_NAMES = frozenset({"self", "state", "_FACTORY", "_factories", "_setattr"})


def _init_code(positional: tuple[str, ...], keyword: tuple[str, ...], factory_fields: tuple[str, ...],
               post_init: bool, store: str) -> types.CodeType:
    key = (positional, keyword, factory_fields, post_init, store)
    code = _INIT_CODES.get(key)
    if code is None:
        # Compiling source is far dearer than renaming a code object, and the classes of a
        # start share a few dozen shapes among them.
        names = positional + keyword
        if _TEMPLATE_NAMES.intersection(names):  # a field that a template's own name would meet
            code = _INIT_CODES[key] = _compile_init(positional, keyword, factory_fields, post_init, store)
            return code
        placeholders = tuple(f"_field{index}" for index in range(len(names)))
        factories = tuple(index for index, name in enumerate(names) if name in factory_fields)
        shape = (len(positional), len(keyword), factories, post_init, store)
        template = _INIT_TEMPLATES.get(shape)
        if template is None:
            template = _INIT_TEMPLATES[shape] = _compile_init(
                placeholders[:len(positional)], placeholders[len(positional):],
                tuple(placeholders[index] for index in factories), post_init, store)
        renamed = dict(zip(placeholders, names))
        code = _INIT_CODES[key] = template.replace(
            co_varnames=tuple(renamed.get(name, name) for name in template.co_varnames),
            co_names=tuple(renamed.get(name, name) for name in template.co_names),
            co_consts=tuple(renamed.get(value, value) if isinstance(value, str) else value
                            for value in template.co_consts))
    return code


def _compile_init(positional: tuple[str, ...], keyword: tuple[str, ...], factory_fields: tuple[str, ...],
                  post_init: bool, store: str) -> types.CodeType:
    params = ", ".join(("self",) + positional + (("*",) + keyword if keyword else ()))
    lines = [f"def __init__({params}):"] + (["    state = self.__dict__"] if store == "dict" else [])
    for name in positional + keyword:
        value = f"_factories[{name!r}]() if {name} is _FACTORY else {name}" if name in factory_fields else name
        lines.append("    " + _STORES[store].format(name=name, value=value))
    if post_init:
        lines.append("    self.__post_init__()")
    if len(lines) == 1:
        lines.append("    pass")
    namespace: dict[str, Any] = {}
    exec("\n".join(lines), {}, namespace)  # source built from placeholder names only
    return namespace["__init__"].__code__
