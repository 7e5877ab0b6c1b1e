"""Large numeric list literals of `R.const(...)`, read without Python's `ast`.

A model with its weights bound as constants prints as megabytes of nested lists
(`relaxc --params`, then `-S`). Python's `ast` turns each number into an object
and takes seconds on such a file; `json` reads the same text in C, far
faster. Before the file goes to `ast`, each long `const([...` literal made of
numbers only is cut out and replaced by a placeholder name padded with spaces to
the literal's length, so lines and columns of everything else (and thus every
diagnostic) stay where they were. `R.const(placeholder, ...)` then takes its
nested list from the table. Literals this does not recognise (other characters,
a line break inside, unbalanced brackets, JSON rejecting a number spelling such
as `.5`) are left in the text for the ordinary path.

`printing()` and `reading()` go further for relaxc's one-shot, which prints its lowered module
only to read it straight back (so that it builds exactly what the staged
`relaxc -S` + `relaxas` does): inside it the printer writes a short placeholder
instead of each large array whose text reads back to the very same bits (integers,
finite floats), and the parser takes the array itself. Only the columns after such
a literal on its line move; the bytecode records where bindings start, never where
they end, so the artifact is the same.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import re

import numpy as np

# Short literals cost nothing to read the ordinary way.
MIN_LENGTH = 256
PLACEHOLDER_PREFIX = "__relax_array_literal_"
DEFERRED_PREFIX = "__relax_deferred_array_"
# Arrays smaller than this print as text even inside deferred().
DEFERRED_MIN_SIZE = 64

# (table, "print" | "read") while relaxc's one-shot prints or reads its lowered module
_DEFERRED: contextvars.ContextVar[tuple[dict, str] | None] = contextvars.ContextVar("relax_deferred", default=None)


@contextlib.contextmanager
def _deferring(table: dict | None, mode: str):
    token = _DEFERRED.set(None if table is None else (table, mode))
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def printing(table: dict | None):
    """Within: the printer writes a placeholder for each large exactly-printable array
    and keeps the array in `table` (None: print everything as text)."""
    return _deferring(table, "print")


def reading(table: dict | None):
    """Within: the parser takes the arrays of `table`'s placeholders."""
    return _deferring(table, "read")


def defer(data: np.ndarray) -> str | None:
    """The placeholder the printer writes for `data`, or None to print it as text."""
    state = _DEFERRED.get()
    if state is None or state[1] != "print" or data.size < DEFERRED_MIN_SIZE or not _prints_exactly(data):
        return None
    table = state[0]
    name = f"{DEFERRED_PREFIX}{len(table)}"
    table[name] = data
    return name


def deferred_arrays() -> dict:
    """placeholder -> array the parser may take (empty outside reading())."""
    state = _DEFERRED.get()
    return dict(state[0]) if state is not None and state[1] == "read" else {}


def _prints_exactly(data: np.ndarray) -> bool:
    """Whether printing and reading back gives the same bits: integers, and finite
    floats (17 significant digits identify a double; nan's payload would be lost)."""
    if data.dtype.kind in "iub":
        return True
    return data.dtype.kind == "f" and data.dtype.itemsize <= 8 and bool(np.isfinite(data).all())

_OPENING = re.compile(r"\s*\[")
_BRACKETS = re.compile(r"[\[\]]")
_NUMBERS_ONLY = re.compile(r"[-+0-9.eE,\s\[\]]*")


def extract(text: str) -> tuple[str, dict[str, list]]:
    """The text with long numeric const literals replaced, and placeholder -> nested list
    (or array, for the placeholders of deferred())."""
    deferred_table = deferred_arrays()
    if "const(" not in text or PLACEHOLDER_PREFIX in text:
        return text, deferred_table
    table: dict[str, list] = {}
    pieces: list[str] = []
    done = 0
    for start in _literal_starts(text):
        if start < done:
            continue
        end = _closing_bracket(text, start)
        if end is None or end - start < MIN_LENGTH:
            continue
        literal = text[start:end]
        if "\n" in literal or _NUMBERS_ONLY.fullmatch(literal) is None:
            continue
        try:
            value = json.loads(literal)
        except ValueError:
            continue
        if not _all_finite(value):
            continue  # the parser's own reading reports the number at its place
        name = f"{PLACEHOLDER_PREFIX}{len(table)}"
        table[name] = value
        pieces.append(text[done:start])
        pieces.append(name.ljust(len(literal)))
        done = end
    if not table:
        return text, deferred_table
    pieces.append(text[done:])
    return "".join(pieces), {**deferred_table, **table}


def _all_finite(value) -> bool:
    """Whether json read only finite numbers: the text has no `inf`, so an infinity is a
    float beyond float64 (1e999), which Python's reading would turn into inf too."""
    try:
        return bool(np.isfinite(np.asarray(value, dtype=np.float64)).all())
    except (OverflowError, ValueError):  # an int beyond float64, ragged lists
        return False


def _literal_starts(text: str):
    """The index of each `[` that opens the first argument of a `const(` call. str.find
    scans megabytes far faster than a regular expression that starts with a word boundary."""
    position = text.find("const(")
    while position >= 0:
        if position == 0 or not (text[position - 1].isalnum() or text[position - 1] == "_"):
            opening = _OPENING.match(text, position + len("const("))
            if opening is not None:
                yield opening.end() - 1
        position = text.find("const(", position + 1)


def _closing_bracket(text: str, start: int) -> int | None:
    """The index just past the `]` that closes the `[` at `start`, or None."""
    depth = 0
    for match in _BRACKETS.finditer(text, start):
        if match.group() == "[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return match.end()
    return None
