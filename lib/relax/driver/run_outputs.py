"""Results of a relaxrun call: flattened to arrays, printed as text, written as .npy files.

A result is flattened depth first: a tuple gives its fields in order, a shape a 1-D
int64 array, a prim value a 0-d array (of the dtype the signature gives it), a
tensor itself. Text is `result[0]: 2x3xf32=[[1 3 5] [7 9 11]]`, one line per
result, elided past `--print-max-elements`; it is written with plain writes (never
rich), so it is the same in a pipe and on a terminal.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

from ..diagnostics import UserError
from ..runtime.dtype import DataType
from ..runtime.objects import ShapeTuple
from .run_inputs import type_spec


def flatten(value, info: dict | None = None) -> list[np.ndarray]:
    info = info or {}
    if isinstance(value, ShapeTuple):
        return [np.array(tuple(value), dtype=np.int64)]
    if isinstance(value, tuple):
        fields = info.get("fields") if info.get("kind") == "tuple" else None
        return [array for index, item in enumerate(value)
                for array in flatten(item, fields[index] if fields and index < len(fields) else None)]
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (bool, int, float, np.generic)):
        return [np.array(value, dtype=_prim_dtype(value, info))]
    if value is None:
        return []
    raise UserError(f"a result of type {type(value).__name__} cannot be given as an array")


def _prim_dtype(value, info: dict):
    dtype = DataType.parse_or_none(info.get("dtype", "void")) if info.get("kind") == "prim" else None
    if dtype is not None and dtype.has_numpy:
        return dtype.numpy
    if isinstance(value, (bool, np.bool_)):
        return np.bool_
    return np.int64 if isinstance(value, (int, np.integer)) else np.float64


# ---- text ------------------------------------------------------------------------------

def _element(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (np.floating, float)):
        text = str(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def format_array(array: np.ndarray, max_elements: int) -> str:
    """`2x3xf32=[[1 3 5] [7 9 11]]`; past max_elements, numpy's `...` summary."""
    if array.ndim == 0:
        return f"{type_spec(array)}={_element(array[()])}"
    body = np.array2string(array, separator=" ", max_line_width=sys.maxsize, threshold=max(max_elements, 0),
                           edgeitems=3, formatter={"all": _element})
    return f"{type_spec(array)}={' '.join(line.strip() for line in body.splitlines())}"


def results_text(arrays: list[np.ndarray], max_elements: int) -> str:
    return "".join(f"result[{index}]: {format_array(array, max_elements)}\n" for index, array in enumerate(arrays))


# ---- files ------------------------------------------------------------------------------

def output_name(index: int) -> str:
    return f"{index:02d}"


def write_outputs(arrays: list[np.ndarray], paths: tuple[str, ...], max_elements: int) -> None:
    """`--output` paths: one per result ('-' prints it as text); one `-` or one .npz takes all."""
    if paths == ("-",):
        sys.stdout.write(results_text(arrays, max_elements))
        return
    if len(paths) == 1 and paths[0].endswith(".npz"):
        _save_npz(paths[0], arrays)
        return
    if len(paths) != len(arrays):
        raise UserError(f"{len(paths)} --output option(s) for {len(arrays)} result(s) "
                        "(give one per result, one '-', one .npz, or --output-dir)")
    for index, (path, array) in enumerate(zip(paths, arrays)):
        if path == "-":
            sys.stdout.write(f"result[{index}]: {format_array(array, max_elements)}\n")
        else:
            _save_npy(path, array)


def write_output_dir(arrays: list[np.ndarray], directory: str) -> list[str]:
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise UserError(f"'{directory}': cannot create the output directory ({error.strerror})") from None
    paths = [os.path.join(directory, f"{output_name(index)}.npy") for index in range(len(arrays))]
    for path, array in zip(paths, arrays):
        _save_npy(path, array)
    return paths


def _save_npy(path: str, array: np.ndarray) -> None:
    try:
        with open(path, "wb") as handle:
            np.save(handle, array, allow_pickle=False)
    except OSError as error:
        raise UserError(f"'{path}': cannot write ({error.strerror})") from None


def _save_npz(path: str, arrays: list[np.ndarray]) -> None:
    try:
        with open(path, "wb") as handle:
            np.savez(handle, **{output_name(i): a for i, a in enumerate(arrays)})
    except OSError as error:
        raise UserError(f"'{path}': cannot write ({error.strerror})") from None


# ---- JSON ------------------------------------------------------------------------------

def json_value(value):
    """Arrays as nested lists; NaN and infinities as strings (JSON has no spelling for them)."""
    if isinstance(value, np.ndarray):
        return json_value(value.tolist())
    if isinstance(value, list):
        return [json_value(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def json_result(index: int, array: np.ndarray, with_values: bool) -> dict:
    entry = {"index": index, "type": type_spec(array), "dtype": str(DataType.from_numpy(array.dtype)),
             "shape": list(array.shape)}
    if with_values:
        entry["values"] = json_value(array)
    return entry
