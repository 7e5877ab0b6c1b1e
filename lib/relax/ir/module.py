"""IRModule: the unit every tool reads and writes, a named set of functions.

Functions are Relax `Function`s and TIR `PrimFunc`s, kept in insertion order (the
printer decides how to order them on output). A module also carries attributes and
global infos (such as virtual devices) as TVM's does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from .expr import Function, GlobalVar
from .node import EMPTY, FrozenDict, Node, node
from .tir_stmt import PrimFunc

BaseFunc = Function | PrimFunc


@node
class IRModule(Node):
    functions: FrozenDict = EMPTY  # name -> Function | PrimFunc
    attrs: FrozenDict = EMPTY
    global_infos: FrozenDict = EMPTY

    @staticmethod
    def from_functions(functions: Mapping[str, BaseFunc], **kwargs) -> "IRModule":
        return IRModule(FrozenDict(functions), **kwargs)

    def __getitem__(self, name: str | GlobalVar) -> BaseFunc:
        key = name.name_hint if isinstance(name, GlobalVar) else name
        return self.functions[key]

    def __contains__(self, name: str | GlobalVar) -> bool:
        key = name.name_hint if isinstance(name, GlobalVar) else name
        return key in self.functions

    def __iter__(self) -> Iterator[str]:
        return iter(self.functions)

    def items(self):
        return self.functions.items()

    def get_global_var(self, name: str) -> GlobalVar:
        if name not in self.functions:
            raise KeyError(f"no function '{name}' in the module")
        return GlobalVar(name)

    def relax_functions(self) -> dict[str, Function]:
        return {k: v for k, v in self.functions.items() if isinstance(v, Function)}

    def prim_funcs(self) -> dict[str, PrimFunc]:
        return {k: v for k, v in self.functions.items() if isinstance(v, PrimFunc)}

    def with_function(self, name: str, func: BaseFunc) -> "IRModule":
        """A new module with `name` added or replaced."""
        return IRModule(self.functions.updated(**{name: func}), self.attrs, self.global_infos, span=self.span)

    def without_function(self, name: str) -> "IRModule":
        return IRModule(self.functions.without(name), self.attrs, self.global_infos, span=self.span)

    def as_pyfunc(self, name: str, backend: str = "numpy") -> str:
        """Python source of a `@I.py_func` method equivalent to the Relax function `name`,
        with numpy (or torch, `backend="torch"`) for its operators (relax/py_convert/)."""
        from ..py_convert import as_pyfunc

        return as_pyfunc(self, name, backend)
