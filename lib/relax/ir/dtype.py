"""Data types as TVM spells them: "float32", "int64", "bool", "handle", "float32x4".

A dtype is a plain string; these helpers read its parts. "void" means unknown.
"""

from __future__ import annotations

import re
from functools import lru_cache

_PATTERN = re.compile(r"^(bool|handle|void|int|uint|float|bfloat|e4m3_float|e5m2_float)(\d*)(?:x(\d+))?$")

# Element kinds whose bit width is implied when the string has none.
_DEFAULT_BITS = {"bool": 1, "handle": 64, "void": 0}

# The bit widths each kind comes in.
_VALID_BITS = {
    "int": (1, 4, 8, 16, 32, 64), "uint": (1, 4, 8, 16, 32, 64), "float": (8, 16, 32, 64),
    "bfloat": (16,), "e4m3_float": (8,), "e5m2_float": (8,),
}

SUPPORTED_NUMPY = {
    "bool": "bool",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "float16": "float16", "float32": "float32", "float64": "float64",
}


@lru_cache(maxsize=None)
def parse(dtype: str) -> tuple[str, int, int]:
    """(kind, bits, lanes) of a dtype string; raises ValueError for an unknown one."""
    match = _PATTERN.match(dtype)
    if not match:
        raise ValueError(f"unknown data type '{dtype}'")
    kind, bits, lanes = match.groups()
    if kind in _DEFAULT_BITS:
        if bits:
            raise ValueError(f"unknown data type '{dtype}'")
        return kind, _DEFAULT_BITS[kind], int(lanes or 1)
    if not bits or int(bits) not in _VALID_BITS[kind]:
        raise ValueError(f"unknown data type '{dtype}'")
    return kind, int(bits), int(lanes or 1)


def is_valid(dtype: str) -> bool:
    try:
        parse(dtype)
    except ValueError:
        return False
    return True


def kind(dtype: str) -> str:
    return parse(dtype)[0]


def bits(dtype: str) -> int:
    return parse(dtype)[1]


def lanes(dtype: str) -> int:
    return parse(dtype)[2]


def element(dtype: str) -> str:
    """The scalar type of a vector type: "float32x4" -> "float32"."""
    return dtype.split("x")[0] if parse(dtype)[2] > 1 else dtype


def with_lanes(dtype: str, count: int) -> str:
    scalar = element(dtype)
    return scalar if count == 1 else f"{scalar}x{count}"


def is_float(dtype: str) -> bool:
    return parse(dtype)[0] in ("float", "bfloat", "e4m3_float", "e5m2_float")


def is_int(dtype: str) -> bool:
    return parse(dtype)[0] == "int"


def is_uint(dtype: str) -> bool:
    return parse(dtype)[0] == "uint"


def is_bool(dtype: str) -> bool:
    return parse(dtype)[0] == "bool"


def itemsize(dtype: str) -> int:
    """Bytes per element as stored in a tensor (bool takes a byte)."""
    kind_, bits_, lanes_ = parse(dtype)
    return max(1, (bits_ + 7) // 8) * lanes_


def to_numpy(dtype: str):
    import numpy as np

    try:
        return np.dtype(SUPPORTED_NUMPY[dtype])
    except KeyError:
        raise ValueError(f"data type '{dtype}' has no numpy equivalent") from None


def from_numpy(np_dtype) -> str:
    import numpy as np

    name = np.dtype(np_dtype).name
    if name not in SUPPORTED_NUMPY:
        raise ValueError(f"numpy type '{name}' is not supported")
    return name
