"""`relaxrun --input` and `--expected-output` values: files, inline values, names.

    x.npy | @x.npy          one array from a .npy file ('-': a .npy on standard input)
    @inputs.npz             every array of an .npz, each under its key
    name=@x.npy             bound by name (name=2x3xf32=1,2,3 works too)
    2x3xf32=1,2,3,4,5,6     inline values; one value splats; no '=': zeros
    f32=3.5                 a scalar

Element types take TVM's names (float32, int64, bool) and the short ones (f32, i64,
u8, i1). Arrays are read with numpy, never with pickle.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass

import numpy as np

from ..diagnostics import UserError
from ..runtime.dtype import DataType
from .io import read_bytes

_SHORT_TYPES = {"f": "float", "i": "int", "u": "uint", "bf": "bfloat", "si": "int", "ui": "uint"}
_TYPE = r"(?:bool|i1|(?:float|int|uint|bfloat|f|i|u|bf|si|ui)\d+)"
_TYPE_SPEC = re.compile(rf"((?:\d+x)*)({_TYPE})")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*|\d+")


@dataclass(frozen=True)
class Supplied:
    """One array given on the command line: what it is bound to and which option gave it."""

    value: np.ndarray
    origin: str            # "--input x.npy", "--input @in.npz (array 'x')"
    name: str | None = None


def parse_dtype(text: str) -> np.dtype:
    """f32 / float32 / i1 / bool -> the numpy dtype."""
    if text == "i1":
        text = "bool"
    match = re.fullmatch(r"(bf|si|ui|f|i|u)(\d+)", text)
    if match:
        text = _SHORT_TYPES[match.group(1)] + match.group(2)
    return DataType.parse(text).numpy


def type_spec(array: np.ndarray) -> str:
    """`2x3xf32`: how an array's shape and element type are written on the command line."""
    dtype = DataType.from_numpy(array.dtype)
    short = str(dtype).replace("float", "f").replace("uint", "u").replace("int", "i")
    short = "i1" if short == "bool" else short
    return "".join(f"{d}x" for d in array.shape) + short


def parse_values(specs: tuple[str, ...], option: str = "--input") -> list[Supplied]:
    supplied: list[Supplied] = []
    for spec in specs:
        supplied.extend(parse_value(spec, option))
    return supplied


def parse_value(spec: str, option: str = "--input") -> list[Supplied]:
    origin = f"{option} {spec}"
    left, sep, right = spec.partition("=")
    if sep and _TYPE_SPEC.fullmatch(left):
        return [Supplied(_inline(left, right, origin), origin)]
    if sep and _NAME.fullmatch(left):
        values = parse_value(right, option)
        if len(values) != 1:
            raise UserError(f"{origin}: a name binds one array; '{right}' holds {len(values)}")
        return [Supplied(values[0].value, origin, left)]
    if not sep and _TYPE_SPEC.fullmatch(spec):
        return [Supplied(_inline(spec, None, origin), origin)]
    if sep:
        raise UserError(f"{origin}: '{left}' is neither a parameter name nor a type such as 2x3xf32")
    return _from_file(spec[1:] if spec.startswith("@") else spec, origin)


# ---- inline values --------------------------------------------------------------------------

def _inline(type_text: str, values: str | None, origin: str) -> np.ndarray:
    match = _TYPE_SPEC.fullmatch(type_text)
    shape = tuple(int(d) for d in match.group(1).split("x") if d)
    try:
        dtype = parse_dtype(match.group(2))
    except UserError as error:
        raise UserError(f"{origin}: {error}") from None
    if values is None:
        return np.zeros(shape, dtype)
    items = [v for v in re.split(r"[,\s\[\]]+", values) if v]
    if not items:
        raise UserError(f"{origin}: no values after '='")
    parsed = [_element(item, dtype, origin) for item in items]
    count = int(np.prod(shape, dtype=np.int64))
    if len(parsed) == 1:
        return np.full(shape, parsed[0], dtype)
    if len(parsed) != count:
        raise UserError(f"{origin}: {len(parsed)} values for shape {type_text} ({count} elements); "
                        "give all of them or one to splat")
    return np.array(parsed, dtype).reshape(shape)


def _element(item: str, dtype: np.dtype, origin: str):
    lowered = item.lower()
    try:
        if dtype == np.bool_:
            if lowered in ("true", "false"):
                return lowered == "true"
            return bool(int(item))
        if dtype.kind in "iu":
            value = int(item, 0)
            info = np.iinfo(dtype)
            if not info.min <= value <= info.max:
                raise UserError(f"{origin}: {item} is out of range for {dtype}")
            return value
        return float(item)
    except ValueError:
        raise UserError(f"{origin}: '{item}' is not a {DataType.from_numpy(dtype)} value") from None


# ---- files ----------------------------------------------------------------------------------

def _from_file(path: str, origin: str) -> list[Supplied]:
    data = read_bytes(path)
    try:
        if data[:4] == b"PK\x03\x04" or (not data and path.endswith(".npz")):
            with np.load(io.BytesIO(data), allow_pickle=False) as archive:
                return [Supplied(_checked(archive[key], origin), f"{origin} (array '{key}')", key)
                        for key in archive.files]
        return [Supplied(_checked(np.load(io.BytesIO(data), allow_pickle=False), origin), origin)]
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
        raise UserError(f"'{path}': not a numpy .npy or .npz file ({error})") from None


def _checked(array: np.ndarray, origin: str) -> np.ndarray:
    try:
        DataType.from_numpy(array.dtype)
    except UserError:
        raise UserError(f"{origin}: arrays of numpy dtype '{array.dtype}' cannot be passed to the VM") from None
    return array if array.flags.c_contiguous else array.copy(order="C")
