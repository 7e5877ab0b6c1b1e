"""Source spans and compiler diagnostics in the `file:line:col: error: message` form.

Every user-facing error of the toolchain is a Diagnostic. Errors found while
reading or checking a file are collected (several independent errors are reported
together) and raised once as a DiagnosticError; the tools render them with the
source line and a caret under the offending token.
"""

from __future__ import annotations

from typing import Iterable, TextIO

from .records import record


@record
class Span:
    """A range of source text; lines and columns are 1-based, `end_column` exclusive."""

    source: str
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


@record
class Diagnostic:
    severity: str  # "error", "warning" or "note"
    message: str
    span: Span | None = None
    notes: tuple["Diagnostic", ...] = ()


class DiagnosticError(Exception):
    """One or more diagnostics, at least one of them an error."""

    def __init__(self, diagnostics: Iterable[Diagnostic]):
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))


class UserError(Exception):
    """An error in what the user gave (a file, a flag, an input) with no source location."""


def error(message: str, span: Span | None = None, notes: Iterable[Diagnostic] = ()) -> DiagnosticError:
    return DiagnosticError([Diagnostic("error", message, span, tuple(notes))])


def note(message: str, span: Span | None = None) -> Diagnostic:
    return Diagnostic("note", message, span)


class SourceManager:
    """Remembers the text of every file read, so diagnostics can quote source lines."""

    def __init__(self) -> None:
        self._texts: dict[str, list[str]] = {}

    def add(self, name: str, text: str) -> None:
        self._texts[name] = text.splitlines()

    def line(self, name: str, line: int) -> str | None:
        lines = self._texts.get(name)
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1]


SOURCES = SourceManager()


def render(diagnostic: Diagnostic, tool: str, sources: SourceManager = SOURCES) -> str:
    """The text of one diagnostic and its notes, each ending in a newline."""
    out = []
    span = diagnostic.span
    if span is None:
        out.append(f"{tool}: {diagnostic.severity}: {diagnostic.message}\n")
    else:
        out.append(f"{span}: {diagnostic.severity}: {diagnostic.message}\n")
        text = sources.line(span.source, span.line)
        if text is not None:
            out.append(text.expandtabs(8) + "\n")
            out.append(" " * (span.column - 1) + "^\n")
    for child in diagnostic.notes:
        out.append(render(child, tool, sources))
    return "".join(out)


def report(diagnostics: Iterable[Diagnostic], tool: str, stream: TextIO, error_limit: int = 20) -> int:
    """Writes diagnostics to `stream`; returns the number of errors among them."""
    errors = 0
    for diagnostic in diagnostics:
        if diagnostic.severity == "error":
            errors += 1
            if error_limit and errors > error_limit:
                continue
        stream.write(render(diagnostic, tool))
    if errors > 1 or (error_limit and errors > error_limit):
        shown = f"{errors} errors generated."
        if error_limit and errors > error_limit:
            shown = f"too many errors emitted, stopping now; {shown}"
        stream.write(shown + "\n")
    return errors
