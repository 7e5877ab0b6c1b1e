"""`relaxrun --expected-output`: results against expected arrays, within --atol/--rtol.

A float element matches when |actual - expected| <= atol + rtol * |expected| (numpy's
isclose, NaN equal to NaN); integers and booleans must be equal. A mismatch names the
result, the first differing index, and the largest absolute and relative errors.
"""

from __future__ import annotations

import numpy as np

from ..records import record
from .run_inputs import Supplied, type_spec

DEFAULT_ATOL = 1e-5
DEFAULT_RTOL = 1e-4


@record
class Mismatch:
    index: int
    message: str

    def __str__(self) -> str:
        return f"[FAILED] result[{self.index}]: {self.message}"


def order_expected(supplied: list[Supplied]) -> list[Supplied]:
    """Expected arrays in result order: names '00', '1', ... give the index; others keep their place."""
    if supplied and all(item.name is not None and item.name.isdigit() for item in supplied):
        return sorted(supplied, key=lambda item: int(item.name))
    return supplied


def compare(results: list[np.ndarray], expected: list[Supplied], atol: float, rtol: float) -> list[Mismatch]:
    expected = order_expected(expected)
    problems: list[Mismatch] = []
    if len(results) != len(expected):
        problems.append(Mismatch(min(len(results), len(expected)),
                                 f"{len(results)} result(s), but {len(expected)} expected output(s) given"))
    for index, (actual, item) in enumerate(zip(results, expected)):
        message = compare_one(actual, item.value, atol, rtol)
        if message is not None:
            problems.append(Mismatch(index, f"{message} (expected from {item.origin})"))
    return problems


def compare_one(actual: np.ndarray, expected: np.ndarray, atol: float, rtol: float) -> str | None:
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return f"got {type_spec(actual)}, expected {type_spec(expected)}"
    if actual.size == 0:
        return None
    if actual.dtype.kind == "f":
        close = np.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = actual == expected
    if close.all():
        return None
    first = tuple(int(i) for i in np.argwhere(~close)[0])
    wide_actual, wide_expected = actual.astype(np.float64), expected.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        abs_error = np.abs(wide_actual - wide_expected)
        rel_error = abs_error / np.abs(wide_expected)
    abs_error, rel_error = abs_error[~close], rel_error[~close]
    max_abs = float(np.nanmax(abs_error)) if not np.isnan(abs_error).all() else float("nan")
    max_rel = float(np.nanmax(rel_error)) if not np.isnan(rel_error).all() else float("nan")
    where = f"[{', '.join(map(str, first))}]"
    return (f"{int((~close).sum())} of {close.size} elements differ; first at {where}: got "
            f"{actual[first]!s}, expected {expected[first]!s}; max abs error {max_abs:.6g}, "
            f"max rel error {max_rel:.6g} (atol {atol:g}, rtol {rtol:g})")
