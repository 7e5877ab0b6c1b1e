"""Large numeric list literals of `R.const(...)`, read without Python's `ast`.

A model with its weights bound as constants prints as megabytes of nested lists
(`relaxc --params`, then `-S`). Python's `ast` turns each number into an object
and takes seconds on such a file; `json` reads the same text in C, tens of times
faster. Before the file goes to `ast`, each long `const([...` literal made of
numbers only is cut out and replaced by a placeholder name padded with spaces to
the literal's length, so lines and columns of everything else (and thus every
diagnostic) stay where they were. `R.const(placeholder, ...)` then takes its
nested list from the table. Literals this does not recognise (other characters,
a line break inside, unbalanced brackets, JSON rejecting a number spelling such
as `.5`) are left in the text for the ordinary path.
"""

from __future__ import annotations

import json
import re

# Short literals cost nothing to read the ordinary way.
MIN_LENGTH = 256
PLACEHOLDER_PREFIX = "__relax_array_literal_"

_OPENING = re.compile(r"\s*\[")
_BRACKETS = re.compile(r"[\[\]]")
_NUMBERS_ONLY = re.compile(r"[-+0-9.eE,\s\[\]]*")


def extract(text: str) -> tuple[str, dict[str, list]]:
    """The text with long numeric const literals replaced, and placeholder -> nested list."""
    if "const(" not in text or PLACEHOLDER_PREFIX in text:
        return text, {}
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
        name = f"{PLACEHOLDER_PREFIX}{len(table)}"
        table[name] = value
        pieces.append(text[done:start])
        pieces.append(name.ljust(len(literal)))
        done = end
    if not table:
        return text, {}
    pieces.append(text[done:])
    return "".join(pieces), table


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
