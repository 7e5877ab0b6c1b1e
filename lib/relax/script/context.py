"""State shared while parsing one file: spans, collected errors, scopes, aliases.

The Relax parser and the TIR parser both report through one ParseContext, so that
independent errors of a file are all reported together, each with its location.
"""

from __future__ import annotations

import ast
from dataclasses import field
from typing import Any

from ..diagnostics import Diagnostic, DiagnosticError, Span
from ..records import record


class ParseAbort(Exception):
    """Unwinds out of a construct after its error was recorded; the parser resumes
    at the next function or statement."""


@record(mutable=True)
class Scope:
    """A chain of name -> value tables (values are IR nodes or parser markers)."""

    names: dict[str, Any] = field(default_factory=dict)
    parent: "Scope | None" = None

    def lookup(self, name: str) -> Any:
        scope = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def define(self, name: str, value: Any) -> None:
        self.names[name] = value

    def child(self) -> "Scope":
        return Scope(parent=self)


@record(eq=False)
class ModuleRef:
    """What the module's class name (and `cls = Module`) stands for inside function
    bodies: `cls.f` names the module's function `f`, as a GlobalVar."""

    name: str
    global_vars: dict[str, Any]


# The dialects a TVMScript file imports, under whatever alias the header binds them.
DIALECTS = ("ir", "relax", "tir")
DEFAULT_ALIASES = {"I": "ir", "R": "relax", "T": "tir"}


class ParseContext:
    def __init__(self, source_name: str, text: str):
        self.source_name = source_name
        self.lines = text.splitlines()
        self.ascii = text.isascii()
        self._dialect_cache: dict[int, tuple[ast.expr, tuple[str, str] | None]] = {}
        self.diagnostics: list[Diagnostic] = []
        self.aliases: dict[str, str] = dict(DEFAULT_ALIASES)
        # placeholder name -> nested list of a long R.const literal (script.array_literals)
        self.array_literals: dict[str, list] = {}
        self.signatures_only: frozenset[str] = frozenset()  # PrimFuncs read without their bodies

    # -- locations -------------------------------------------------------------
    def span(self, node: ast.AST | None) -> Span | None:
        if node is None or not hasattr(node, "lineno"):
            return None
        if self.ascii:  # byte offsets are character offsets: the common, fast case
            end_line = getattr(node, "end_lineno", None) or node.lineno
            end_offset = getattr(node, "end_col_offset", None)
            end_column = node.col_offset + 2 if end_offset is None else end_offset + 1
            return Span(self.source_name, node.lineno, node.col_offset + 1, end_line, end_column)
        # ast columns are 0-based UTF-8 byte offsets; diagnostics want 1-based characters.
        line_text = self.lines[node.lineno - 1] if 0 < node.lineno <= len(self.lines) else ""
        column = len(line_text.encode("utf-8")[: node.col_offset].decode("utf-8", "replace")) + 1
        end_line = getattr(node, "end_lineno", None) or node.lineno
        end_offset = getattr(node, "end_col_offset", None)
        if end_offset is None:
            end_column = column + 1
        else:
            end_text = self.lines[end_line - 1] if 0 < end_line <= len(self.lines) else ""
            end_column = len(end_text.encode("utf-8")[:end_offset].decode("utf-8", "replace")) + 1
        return Span(self.source_name, node.lineno, column, end_line, end_column)

    # -- errors ----------------------------------------------------------------
    def error(self, message: str, node: ast.AST | None, notes: tuple[Diagnostic, ...] = ()) -> None:
        """Records an error and keeps going."""
        self.diagnostics.append(Diagnostic("error", message, self.span(node), notes))

    def fail(self, message: str, node: ast.AST | None, notes: tuple[Diagnostic, ...] = ()) -> "ParseAbort":
        """Records an error and returns the exception that abandons the construct:
        `raise ctx.fail("...", node)`."""
        self.error(message, node, notes)
        return ParseAbort(message)

    def note(self, message: str, node: ast.AST | None) -> Diagnostic:
        return Diagnostic("note", message, self.span(node))

    def raise_if_errors(self) -> None:
        if any(d.severity == "error" for d in self.diagnostics):
            raise DiagnosticError(self.diagnostics)

    # -- dialect names -----------------------------------------------------------
    def dialect_of(self, node: ast.expr) -> tuple[str, str] | None:
        """For `R.nn.conv2d` returns ("relax", "nn.conv2d"); None if not a dialect name."""
        if not isinstance(node, ast.Attribute):
            return None
        # Readers ask about the same callee several times; the tree outlives the cache.
        # Each entry keeps its node alive, so that no other node can reuse its id.
        cached = self._dialect_cache.get(id(node))
        if cached is not None:
            return cached[1]
        result = self._dialect_of(node)
        self._dialect_cache[id(node)] = (node, result)
        return result

    def _dialect_of(self, node: ast.expr) -> tuple[str, str] | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases or not parts:
            return None
        return self.aliases[node.id], ".".join(reversed(parts))
