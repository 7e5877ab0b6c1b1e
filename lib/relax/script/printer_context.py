"""State of one printing run: variable names in scope, dialects used, module type vars.

Names follow TVM's rule: a variable prints as its name hint, made unique among the
names currently in scope by a suffix (`x`, `x_1`, `x_2`, ...); a name is free again
once the scope that defined it closes. Variables are told apart by identity (nodes
hash by identity), never by their address.

Symbolic variables of function signatures print as module-level declarations
(`n = TypeVar("n")`), as TVM 0.27 does: they are collected per function, sorted by
name, and appended to the module's list in printing order.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

from ..ir.names import fresh_name

_NOT_IDENTIFIER = re.compile(r"[^0-9A-Za-z_]")


class PrintContext:
    def __init__(self):
        self.names: dict[object, str] = {}
        self.taken: set[str] = set()
        self.scopes: list[list[object]] = [[]]
        self.dialects: set[str] = set()  # of "typing", "ir", "tir", "relax"
        self.type_vars: list[str] = []  # module-level TypeVar names, in print order
        self.collecting: set[str] | None = None  # the current function's signature vars
        self.function_header: list[str] | None = None  # where `n = T.int64()` lines go
        self.function_defined: list[object] | None = None
        self.module_name: str | None = None
        self.module_alias_printed = False
        self.in_module = False
        # (node, name) of each node printed under another name than its hint, or under the
        # name of another variable (two sizes of one name)
        self.renamed: list[tuple[object, str]] = []
        # PrimFunc name -> what it printed as (TirPrinter.prim_func, script())
        self.printed_params: dict | None = None
        # where the Relax bindings print (printed_bindings.PrintedBindings), when asked
        self.printed_bindings = None
        # whether an expression printed since this was last cleared reads back as another
        # (a fold the parser makes: printer_prim_expr.py)
        self.reads_back_folded = False

    # -- dialect prefixes ------------------------------------------------------
    def relax(self, attr: str) -> str:
        self.dialects.add("relax")
        return f"R.{attr}"

    def tir(self, attr: str) -> str:
        self.dialects.add("tir")
        return f"T.{attr}"

    def ir(self, attr: str) -> str:
        self.dialects.add("ir")
        return f"I.{attr}"

    # -- names -----------------------------------------------------------------
    def define(self, node: object, hint: str) -> str:
        """Gives `node` a unique name in the innermost scope."""
        name = fresh_name(_NOT_IDENTIFIER.sub("_", hint or "v"), self.taken, separator="_")
        if name != hint:
            self.renamed.append((node, name))
        self.names[node] = name
        self.scopes[-1].append(node)
        return name

    def define_alias(self, node: object, text: str) -> None:
        """Makes `node` print as `text` without reserving a name (buffers' `A.data`)."""
        self.names[node] = text
        self.scopes[-1].append(node)

    def name_of(self, node: object) -> str | None:
        return self.names.get(node)

    def is_defined(self, node: object) -> bool:
        return node in self.names

    @contextmanager
    def scope(self):
        self.scopes.append([])
        try:
            yield
        finally:
            for node in self.scopes.pop():
                name = self.names.pop(node, None)
                if name is not None:
                    self.taken.discard(name)

    # -- module-level type variables ------------------------------------------
    def add_type_var(self, node: object, name: str) -> str:
        """A signature variable: printed by its plain name and declared at module level.

        TVM declares these by name, so two different variables with one name share
        the declaration; the name is not reserved in the enclosing scopes."""
        self.names[node] = name
        self.scopes[0].append(node)
        if self.collecting is not None:
            self.collecting.add(name)
        else:
            self._declare_type_vars([name])
        return name

    def _declare_type_vars(self, names) -> None:
        for name in sorted(names):
            if name not in self.type_vars:
                self.type_vars.append(name)
        if self.type_vars:
            self.dialects.add("typing")

    @contextmanager
    def signature_vars(self):
        """Collects the signature variables of one function; declares them, sorted, after it."""
        outer = self.collecting
        self.collecting = set()
        try:
            yield
        finally:
            collected, self.collecting = self.collecting, outer
            if outer is not None:
                outer.update(collected)
            else:
                self._declare_type_vars(collected)

    def header_lines(self, include_ir: bool = True) -> list[str]:
        """The `# from tvm.script import ...` comments for the dialects used so far."""
        lines = []
        if "typing" in self.dialects:
            lines.append("# from typing import TypeVar")
        if include_ir and "ir" in self.dialects:
            lines.append("# from tvm.script import ir as I")
        if "tir" in self.dialects:
            lines.append("# from tvm.script import tirx as T")
            lines.append("# from tvm.tirx.layout import Axis")
        if "relax" in self.dialects:
            lines.append("# from tvm.script import relax as R")
        return lines
