"""Small readings of Python syntax nodes that the Relax parsers share: a short text of a
node for messages, and whether a node refers into TVM's metadata section (which a
printed module leaves out unless printed with show_meta=True)."""

from __future__ import annotations

import ast

METADATA_MESSAGE = (
    "the data of this value is in a metadata section that the file does not hold"
    " (TVM omits it unless printed with show_meta=True)"
)


def is_metadata(node: ast.expr) -> bool:
    """`metadata["kind"][i]`: a reference into TVM's metadata section."""
    return (
        isinstance(node, ast.Subscript) and isinstance(node.value, ast.Subscript)
        and isinstance(node.value.value, ast.Name) and node.value.value.id == "metadata"
    )


def describe(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - describing a node must never fail
        return type(node).__name__
    return text if len(text) <= 40 else text[:37] + "..."
