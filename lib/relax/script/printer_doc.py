"""Text pieces of the TVMScript printer: Python literals, operator precedence, attributes.

TVM prints through a Python "doc" printer; these helpers reproduce its spelling of
the leaves: floats (`1.0`, `0.10000000000000001`, `"inf"`), strings with C escapes,
attribute values (lists for tuples, dicts with sorted keys), and the precedence
table that decides where an operator expression needs parentheses.
"""

from __future__ import annotations

import math
import re

# Python operator precedence, as TVM's doc printer ranks it (higher binds tighter).
PREC_OR = 3
PREC_AND = 4
PREC_NOT = 5
PREC_COMPARE = 6
PREC_ADD = 11
PREC_MULT = 12
PREC_UNARY = 13
PREC_ATOM = 15


class Expr(str):
    """Printed expression text that remembers its precedence (atoms by default)."""

    precedence: int = PREC_ATOM

    def __new__(cls, text: str, precedence: int = PREC_ATOM):
        obj = super().__new__(cls, text)
        obj.precedence = precedence
        return obj


def child(expr: str, parent: int, same_needs_parens: bool = False) -> str:
    """The operand text, parenthesized when it binds looser than its parent."""
    precedence = getattr(expr, "precedence", PREC_ATOM)
    if precedence < parent or (same_needs_parens and precedence == parent):
        return f"({expr})"
    return expr


def binary(left: str, op: str, right: str, precedence: int) -> Expr:
    """`a op b`: the left operand may share the precedence, the right may not."""
    return Expr(f"{child(left, precedence)} {op} {child(right, precedence, True)}", precedence)


def unary(op: str, operand: str, precedence: int) -> Expr:
    return Expr(f"{op}{child(operand, precedence)}", precedence)


def call(callee: str, args: list[str] | tuple[str, ...] = (), kwargs: list[tuple[str, str]] = ()) -> Expr:
    parts = list(args) + [f"{key}={value}" for key, value in kwargs]
    return Expr(f"{callee}({', '.join(parts)})")


def tuple_text(items: list[str]) -> str:
    if len(items) == 1:
        return f"({items[0]},)"
    return f"({', '.join(items)})"


def list_text(items: list[str]) -> str:
    return f"[{', '.join(items)}]"


def _format_double(value: float) -> str:
    """C++ `operator<<` on a double with %.17g (TVM's spelling of a non-integral float)."""
    text = "%.17g" % value
    return text


def float_text(value: float) -> str:
    """A float literal as TVM prints it: integral values as `2.0`, others with 17
    significant digits, non-finite values as the strings "inf", "-inf", "nan"."""
    if math.isnan(value):
        return '"nan"'
    if math.isinf(value):
        return '"inf"' if value > 0 else '"-inf"'
    if value == math.floor(value):
        # %.1f keeps every digit of a large integral value, as std::fixed does.
        return "%.1f" % value
    return _format_double(value)


_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f\x7f"\\]')
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def string_text(value: str) -> str:
    """A double-quoted string literal with C-style escapes of quotes and control characters."""
    if _NEEDS_ESCAPE.search(value) is None:
        return f'"{value}"'
    pieces = []
    for char in value:
        escaped = _ESCAPES.get(char)
        if escaped is not None:
            pieces.append(escaped)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            pieces.append("\\x%02x" % ord(char))
        else:
            pieces.append(char)
    return '"' + "".join(pieces) + '"'


def int_text(value: int) -> str:
    return str(int(value))


def bool_text(value: bool) -> str:
    return "True" if value else "False"
