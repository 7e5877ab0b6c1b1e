"""Tensor constants as TVMScript literals: nested lists of their elements' text.

Tensors, which TVM would move to a metadata section, print inline, so that the text
stays self-contained (printer_relax.py); the text reads back exactly.
"""

from __future__ import annotations

import numpy as np

from . import printer_doc as doc


def _scalar_text(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return doc.bool_text(bool(value))
    if isinstance(value, (int, np.integer)):
        return doc.int_text(int(value))
    return doc.float_text(float(value))


def array_text(data: np.ndarray) -> str:
    """Nested-list text of an array, built with one join per row (linear time)."""
    if data.ndim == 0:
        return _scalar_text(data[()])
    flat = _flat_texts(data)
    if data.size == 0:
        return _empty_nested(data.shape)
    for extent in reversed(data.shape):
        flat = ["[" + ", ".join(flat[i:i + extent]) + "]" for i in range(0, len(flat), extent)]
    return flat[0]


def _flat_texts(data: np.ndarray) -> list[str]:
    """The text of every element, as _scalar_text spells it. Weights bound as constants
    hold millions of elements: finite floats and integers take one formatting call per
    element instead of several, all others the general path."""
    values = data.reshape(-1).tolist()
    if data.dtype.kind in "iu":
        return [str(v) for v in values]
    if data.dtype.kind == "f" and data.dtype.itemsize <= 8 and np.isfinite(data).all():
        integral = (data == np.floor(data)).reshape(-1)
        if not integral.any():
            return ["%.17g" % v for v in values]  # doc.float_text of a non-integral value
        return ["%.1f" % v if whole else "%.17g" % v for v, whole in zip(values, integral.tolist())]
    return [_scalar_text(v) for v in values]


def _empty_nested(shape) -> str:
    if not shape or shape[0] == 0:
        return "[]"
    return "[" + ", ".join(_empty_nested(shape[1:]) for _ in range(shape[0])) + "]"
