"""The Python functions an executable names: the optional fifth section of a .vmo.

A module may hold Python functions (`@I.py_func`) and its Relax code may call one by
name (`R.call_py_func`, lowered to `vm.builtin.call_py_func`). The executable records
each name once, sorted, with two facts:

    called   the bytecode calls it through vm.builtin.call_py_func, so a VM must bind it
             before running (vm/machine/py_functions.py refuses otherwise)
    source   the function's text as the module held it, embedded by relaxc; None when the
             module has no Python function of that name (it is registered at run time)

Bytes (docs/file-formats-vmo.md, format 0.2):

    u64 count
    count x { str name; u8 flags (bit 0 called, bit 1 source present); str source ("" without) }

A .vmo with no entry has no such section and keeps format 0.1, byte for byte. The
listing (`.py_functions`) prints each entry on one line: `@f called source="..."`.
Nothing here runs or parses the sources: binding them is the VM's job, and only when
the user allows it.
"""

from __future__ import annotations

import json
import re

from ...records import record

CALLED, HAS_SOURCE = 1, 2
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@record
class PyFunctionEntry:
    name: str
    called: bool = False
    source: str | None = None


def check_entries(entries) -> None:
    """Names are Python identifiers, unique and sorted (so that the bytes are canonical)."""
    previous = None
    for entry in entries:
        if not _NAME.fullmatch(entry.name):
            raise ValueError(f"Python function name {entry.name!r} is not an identifier")
        if previous is not None and entry.name <= previous:
            raise ValueError(f"Python functions out of order or repeated: '{entry.name}' after '{previous}'")
        previous = entry.name


def write_section(out, entries) -> None:
    out.u64(len(entries))
    for entry in entries:
        out.string(entry.name)
        out.u8((CALLED if entry.called else 0) | (HAS_SOURCE if entry.source is not None else 0))
        out.string(entry.source or "")


def read_section(reader) -> tuple[PyFunctionEntry, ...]:
    entries = []
    for _ in range(reader.count(17, "Python function")):
        name = reader.string("Python function name")
        flags = reader.u8()
        if flags & ~(CALLED | HAS_SOURCE):
            raise reader.fail(f"Python function '{name}' has unknown flags {flags:#x}")
        source = reader.string("Python function source")
        if not flags & HAS_SOURCE and source:
            raise reader.fail(f"Python function '{name}' has a source but its flags say none")
        entries.append(PyFunctionEntry(name, bool(flags & CALLED), source if flags & HAS_SOURCE else None))
    try:
        check_entries(entries)
    except ValueError as error:
        raise reader.fail(str(error)) from None
    return tuple(entries)


def listing_lines(entries) -> list[str]:
    lines = []
    for entry in entries:
        parts = [f"@{entry.name}"] + (["called"] if entry.called else [])
        if entry.source is not None:
            parts.append("source=" + json.dumps(entry.source))  # ASCII, one line
        lines.append("  " + " ".join(parts) + "\n")
    return lines


_LINE = re.compile(r'@(\S+)( called)?(?: source=(".*"))?')


def parse_listing_line(text: str) -> PyFunctionEntry:
    """One `.py_functions` line back into its entry; ValueError with the reason."""
    match = _LINE.fullmatch(text)
    if match is None:
        raise ValueError("expected '@NAME [called] [source=\"...\"]'")
    source = None
    if match.group(3) is not None:
        try:
            source = json.loads(match.group(3))
        except json.JSONDecodeError:
            raise ValueError("bad quoted Python source") from None
    return PyFunctionEntry(match.group(1), match.group(2) is not None, source)
