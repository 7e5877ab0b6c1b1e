"""A Visitor for checkers: it tracks the innermost source span and collects diagnostics."""

from __future__ import annotations

from ..diagnostics import Diagnostic, Span, note
from . import expr as rx
from . import tir_expr as tir
from .node import Node
from .visitor import Visitor


class ReportingVisitor(Visitor):
    """A visitor that knows the innermost span and collects diagnostics."""

    # Variables and buffers are shared by their definition and every use, so their
    # own spans say where they were defined, not where the walk is.
    _SHARED = (rx.Var, tir.Var, tir.Buffer)

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__()
        self.diagnostics = diagnostics
        self.spans: list[Span] = []
        self.reported: set = set()

    def visit(self, node: Node):
        if node.span is None or isinstance(node, self._SHARED):
            return super().visit(node)
        self.spans.append(node.span)
        try:
            return super().visit(node)
        finally:
            self.spans.pop()

    def error(self, message: str, span: Span | None = None, once: object = None,
              notes: tuple[Diagnostic, ...] = ()) -> None:
        """Reports `message`; with `once`, only the first report for that key."""
        if once is not None:
            if once in self.reported:
                return
            self.reported.add(once)
        where = span or (self.spans[-1] if self.spans else None)
        self.diagnostics.append(Diagnostic("error", message, where, notes))

    @staticmethod
    def defined_here(name: str, node: Node, what: str = "defined") -> tuple[Diagnostic, ...]:
        """A note pointing at where `node` (a variable) was written, when that is known."""
        if node.span is None:
            return ()
        return (note(f"'{name}' is {what} here", node.span),)
