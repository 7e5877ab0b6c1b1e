"""Names a package gives from submodules imported on first use (a module-level __getattr__).

    __getattr__ = lazy_names(__name__, {"VirtualMachine": ".machine.virtual_machine"})

A package uses it for a name whose module would load much more than its importers
need (LLVM, the lowering pipeline, the compiler behind `relax.build`).
"""

from __future__ import annotations

import importlib


def lazy_names(package: str, modules: dict[str, str]):
    """A module __getattr__ for `package`: `modules[name]` is the module defining `name`
    (absolute, or relative to `package` with a leading dot), imported when `name` is first
    asked for."""

    def __getattr__(name):
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module '{package}' has no attribute {name!r}")
        return getattr(importlib.import_module(module, package), name)

    return __getattr__
