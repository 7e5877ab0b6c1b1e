"""What `relaxc` does, as a library function: read, check, transform, emit.

The click command in relaxc/cli.py only gathers options into CompileOptions and
calls `compile_main`; every stage lives in the library.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ..diagnostics import SOURCES, DiagnosticError
from .io import read_text, write_text


@dataclass(frozen=True)
class CompileOptions:
    source: str
    emit: str = "ir"
    output: str | None = None
    verbose: int = 0
    check: bool = True


def parse_source(path: str):
    """Parses a TVMScript file (or '-') into an IRModule, reporting every error."""
    from ..script import parse

    name, text = read_text(path)
    SOURCES.add(name, text)
    return parse(text, name)


def check_module(mod) -> None:
    """Runs the well-formedness checker; its errors stop compilation."""
    from ..ir.well_formed import check_well_formed

    diagnostics = check_well_formed(mod)
    if any(d.severity == "error" for d in diagnostics):
        raise DiagnosticError(diagnostics)
    for warning in diagnostics:
        from ..diagnostics import render

        sys.stderr.write(render(warning, "relaxc"))


def compile_main(options: CompileOptions) -> int:
    mod = parse_source(options.source)
    if options.check:
        check_module(mod)
    if options.emit == "ir":
        from ..script import script

        write_text(options.output, script(mod))
    elif options.emit == "json":
        from ..ir.json import to_json

        write_text(options.output, to_json(mod) + "\n")
    else:  # click restricts the choices; reaching here is a bug
        raise AssertionError(f"unknown emit kind {options.emit!r}")
    return 0
