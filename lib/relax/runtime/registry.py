"""The global PackedFunc registry: names to Python callables.

Bytecode reaches every builtin and every callback by name. The VM looks a name up
first in the executable's imported kernel libraries, then here. Builtins register
themselves under TVM's names (`vm.builtin.match_shape`, ...); users register
callbacks with `register_func`, as a call or as a decorator.
"""

from __future__ import annotations

from typing import Callable

from ..diagnostics import UserError

_REGISTRY: dict[str, Callable] = {}


def register_func(name, f: Callable | None = None, override: bool = False):
    """Registers `f` under `name`; without `f`, returns a decorator that does.

    `@register_func` with no name registers the function under its own __name__.
    """
    if callable(name) and f is None:
        return register_func(name.__name__, name, override)
    if not isinstance(name, str) or not name:
        raise UserError("register_func: the name must be a non-empty string")

    def register(func: Callable) -> Callable:
        if not callable(func):
            raise UserError(f"register_func: '{name}' must be given a callable")
        if name in _REGISTRY and not override:
            raise UserError(f"global function '{name}' is already registered (use override=True)")
        _REGISTRY[name] = func
        return func

    return register if f is None else register(f)


def get_global_func(name: str, allow_missing: bool = False) -> Callable | None:
    func = _REGISTRY.get(name)
    if func is None and not allow_missing:
        raise UserError(f"global function '{name}' is not registered")
    return func


def remove_global_func(name: str) -> None:
    _REGISTRY.pop(name, None)


def list_global_funcs() -> list[str]:
    return sorted(_REGISTRY)
