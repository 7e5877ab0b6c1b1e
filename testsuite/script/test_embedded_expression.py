"""Expressions inside strings (`T.Buffer(("n * 2",), "float32")`, script/prim_expr.py): a bare
name is built without a parse, and must be the very tree (locations included) the parse gives."""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from relax.script.context import ParseAbort, ParseContext
from relax.script.prim_expr import embedded_expression

TEXTS = st.one_of(
    st.sampled_from(["float32", "n", "match", "_", "None", "True", "if", "x1", "ﬁ", "n * 2", "  m ", "a b", ""]),
    st.text(alphabet="abn_1 *+()ﬁé", max_size=8),
)


def _tree(text: str, column: int):
    source = "f(" + " " * column + repr(text) + ")"
    node = ast.parse(source, mode="eval").body.args[0]
    try:
        return ast.dump(embedded_expression(node, ParseContext("s", source), report=False), include_attributes=True)
    except ParseAbort:
        return "abort"


def _parsed(text: str, column: int):
    column += 2  # past `f(`
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return "abort"
    indent = len(text) - len(text.lstrip())
    for child in ast.walk(tree):
        if hasattr(child, "lineno"):
            child.lineno = child.end_lineno = 1
            child.col_offset += column + 1 + indent
            child.end_col_offset += column + 1 + indent
    return ast.dump(tree, include_attributes=True)


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.integers(0, 6))
def test_a_string_reads_as_its_parse(text, column):
    assert _tree(text, column) == _parsed(text, column)
