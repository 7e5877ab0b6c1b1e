"""The bodies of PrimFuncs read as signatures only, left out before Python's `ast` reads the text.

relaxc's one-shot reads back the module it printed with its kernels as signatures only
(parse's `signatures_only`): of a kernel, the reader takes the decorator, the
parameters, the return type and the body's top-level one-line statements
(`T.func_attr(...)`, `n = T.int64()`), and none of its loops. Those loops are most of
the text, and `ast` would still build a Python object for every name and number in
them. So before the text goes to `ast`, each such function's nested blocks are
blanked line by line: every line stays where it was, and with it every source
location the bytecode records. Blanked is only what the reader skips anyway:

- a top-level statement that opens a block (`for ...:`, `with ...:`) and every line
  below it (a `pass` takes the first one's place where nothing else is left);
- nothing of a function where a line is not one complete line of its own (an open
  bracket, a backslash; anywhere in a text with a triple-quoted string): that function
  stays whole, and so does all of such a text.

A cut text that `ast` rejects is never reported: the parser reads the whole text again
(parser.py), so that errors name the text as written.
"""

from __future__ import annotations

import re

_DEF = re.compile(r"( *)def (\w+)\(")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')


def without_bodies(text: str, names) -> str:
    """`text` with the nested blocks of the functions `names` blanked (same lines)."""
    if not names or '"""' in text or "'''" in text:
        return text
    lines = text.split("\n")
    index, changed = 0, False
    while index < len(lines):
        match = _DEF.match(lines[index])
        if match is None or match.group(2) not in names or not _one_line_header(lines[index]):
            index += 1
            continue
        index, replaced = _body(lines, index + 1, len(match.group(1)))
        for line, new in replaced.items():
            lines[line] = new
        changed = changed or bool(replaced)
    return "\n".join(lines) if changed else text


def _one_line_header(line: str) -> bool:
    return line.rstrip().endswith(":") and _complete(line)


def _body(lines: list[str], start: int, def_indent: int) -> tuple[int, dict[int, str]]:
    """(the index of the first line after the function, its lines' replacements: none
    where a line of its body is not one complete statement)."""
    body_indent, replaced, kept, in_block = None, {}, False, False
    end = len(lines)
    for index in range(start, len(lines)):
        line = lines[index]
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        if indent <= def_indent:
            end = index
            break
        if body_indent is None:
            body_indent = indent
        if indent > body_indent and in_block and _complete(line):
            replaced[index] = ""
        elif indent == body_indent and _complete(line):
            in_block = stripped.rstrip().endswith(":")
            if in_block:
                replaced[index] = ""
            else:
                kept = True
        else:  # a continued line: this function stays whole
            return _after(lines, index, def_indent), {}
    if replaced and not kept:  # a def needs a statement
        first = min(replaced)
        replaced[first] = " " * body_indent + "pass"
    return end, replaced


def _after(lines: list[str], index: int, def_indent: int) -> int:
    """The index of the first line after the function whose body holds line `index`."""
    for later in range(index + 1, len(lines)):
        stripped = lines[later].lstrip(" ")
        if stripped and not stripped.startswith("#") and len(lines[later]) - len(stripped) <= def_indent:
            return later
    return len(lines)


def _complete(line: str) -> bool:
    """Whether `line` closes every bracket and string it opens and does not continue."""
    code = _STRING.sub("", line)
    if "'" in code or '"' in code:  # a string left open
        return False
    code = code.split("#", 1)[0]
    return (code.count("(") == code.count(")") and code.count("[") == code.count("]")
            and code.count("{") == code.count("}") and not code.rstrip().endswith("\\"))
