"""Helpers for the parser tests: parse a snippet, collect the diagnostics of a bad one."""

from __future__ import annotations

import textwrap

import pytest

from relax.diagnostics import DiagnosticError
from relax.script import parse

HEADER = """\
# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tir as T

@I.ir_module
class Module:
"""


def module(body: str):
    """Parses `body` (functions, indented as written) inside the standard module header."""
    return parse(HEADER + textwrap.indent(textwrap.dedent(body), "    "), "test.relax")


def function(body: str, name: str = "main"):
    """Parses one function and returns it."""
    return module(body)[name]


def errors(text: str, wrap: bool = True) -> list[tuple[int, int, str]]:
    """(line, column, message) of every diagnostic of a bad input; lines count from
    the first line of `text` when `wrap` puts it inside the module header."""
    source = HEADER + textwrap.indent(textwrap.dedent(text), "    ") if wrap else textwrap.dedent(text)
    offset = HEADER.count("\n") if wrap else 0
    with pytest.raises(DiagnosticError) as caught:
        parse(source, "bad.relax")
    return [
        (d.span.line - offset, d.span.column - (4 if wrap else 0), d.message) if d.span else (0, 0, d.message)
        for d in caught.value.diagnostics
    ]


def bindings(func) -> list:
    """Every binding of a function body, in order, across its blocks."""
    return [b for block in func.body.blocks for b in block.bindings]
