"""`relaxrun --input` and `--expected-output` values: files, inline values, names.

    x.npy | @x.npy          one array from a .npy file ('-': a .npy on standard input)
    @inputs.npz             every array of an .npz, each under its key
    name=@x.npy             bound by name (name=2x3xf32=1,2,3 works too)
    2x3xf32=1,2,3,4,5,6     inline values; one value splats; no '=': zeros
    f32=3.5                 a scalar

Element types take TVM's names (float32, int64, bool) and the short ones (f32, i64,
u8, i1). Arrays are read with numpy, never with pickle (npy_read.py).

Nothing large is allocated before the inputs are checked against the signature: a
splat or zeros is a broadcast view of one element until `materialize` makes it an
array, within INLINE_LIMIT bytes, after the check.
"""

from __future__ import annotations

import math
import re
import sys

import numpy as np

from ..diagnostics import UserError
from ..records import record
from ..runtime.dtype import DataType
from .io import read_bytes
from .npy_read import MAX_RANK, is_npz, read_npy, read_npz

_SHORT_TYPES = {"f": "float", "i": "int", "u": "uint", "bf": "bfloat", "si": "int", "ui": "uint"}
_TYPE = r"(?:bool|i1|(?:float|int|uint|bfloat|f|i|u|bf|si|ui)\d+)"
_TYPE_SPEC = re.compile(rf"((?:\d+x)*)({_TYPE})")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*|\d+")
INLINE_LIMIT = 1 << 30  # bytes of one inline tensor (a splat or zeros); larger ones come from files


@record
class Supplied:
    """One array given on the command line: what it is bound to and which option gave it.
    `value` is a read-only broadcast view for a splat or zeros (see `materialize`)."""

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
    shape = _inline_shape(match.group(1), origin)
    try:
        dtype = parse_dtype(match.group(2))
    except UserError as error:
        raise UserError(f"{origin}: {error}") from None
    count = math.prod(shape)
    sized = math.prod(d for d in shape if d)  # numpy refuses these even when a size is 0
    if sized * dtype.itemsize > sys.maxsize:
        beside_zero = "" if count else " (numpy counts the sizes other than 0 even when one is 0)"
        raise UserError(f"{origin}: {sized} elements of {DataType.from_numpy(dtype)} do not fit in memory{beside_zero}")
    if values is None:
        return np.broadcast_to(np.zeros((), dtype), shape)  # no memory until materialize
    items = [v for v in re.split(r"[,\s\[\]]+", values) if v]
    if not items:
        raise UserError(f"{origin}: no values after '='")
    if len(items) != 1 and len(items) != count:
        raise UserError(f"{origin}: {len(items)} values for shape {type_text} ({count} elements); "
                        "give all of them or one to splat")
    parsed = [_element(item, dtype, origin) for item in items]
    if len(parsed) == 1:
        return np.broadcast_to(np.array(parsed[0], dtype), shape)
    return np.array(parsed, dtype).reshape(shape)


def _inline_shape(text: str, origin: str) -> tuple[int, ...]:
    """`2x3x` -> (2, 3), within numpy's rank and each size within an index (so that the
    element count below stays a number that prints)."""
    dims = [d for d in text.split("x") if d]
    if len(dims) > MAX_RANK:
        raise UserError(f"{origin}: {len(dims)} dimensions; arrays have at most {MAX_RANK}")
    for d in dims:
        if len(d.lstrip("0")) > len(str(sys.maxsize)) or int(d) > sys.maxsize:
            spelled = d if len(d) <= 40 else f"of {len(d)} digits"
            raise UserError(f"{origin}: size {spelled} is larger than {sys.maxsize}, the largest array size")
    return tuple(int(d) for d in dims)


def materialize(item: Supplied) -> np.ndarray:
    """The array to pass to the VM: a splat or zeros becomes a real array here, once the
    signature has accepted its shape, if it is within INLINE_LIMIT bytes."""
    array = item.value
    if array.flags.writeable:
        return array
    if array.nbytes > INLINE_LIMIT:
        raise UserError(f"{item.origin}: {type_spec(array)} takes {array.nbytes} bytes; an inline value "
                        f"takes at most {INLINE_LIMIT} (1 GiB): give larger inputs as .npy files")
    return array.copy()


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
    if is_npz(data) or (not data and path.endswith(".npz")):
        return [Supplied(_checked(array, origin), f"{origin} (array '{key}')", key)
                for key, array in read_npz(data, path)]
    return [Supplied(_checked(read_npy(data, f"'{path}'"), origin), origin)]


def _checked(array: np.ndarray, origin: str) -> np.ndarray:
    try:
        DataType.from_numpy(array.dtype)
    except UserError:
        raise UserError(f"{origin}: arrays of numpy dtype '{array.dtype}' cannot be passed to the VM") from None
    return array if array.flags.c_contiguous else array.copy(order="C")
