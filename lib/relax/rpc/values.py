"""VM values on the wire: a JSON description in the message header, tensors as .npy blobs.

    tensor      {"tensor": i}          blob i holds the array as a .npy file (np.save, no pickle)
    shape       {"shape": [2, 3]}      a ShapeTuple
    tuple       {"tuple": [v, ...]}    a Relax tuple (lists travel as tuples too)
    float       {"float": "1.5"}       repr(), so that inf and nan travel as well
    int, bool, str, null               themselves

Tensors are read back with driver/npy_read.py's bounded reader, which checks the header
against the bytes that came and refuses object arrays.
"""

from __future__ import annotations

import io

import numpy as np

from ..diagnostics import UserError
from ..driver.npy_read import read_npy
from ..runtime.objects import ShapeTuple
from .framing import ProtocolError

MAX_DEPTH = 64  # nesting of tuples in one value


def encode_value(value, blobs: list[bytes], depth: int = 0):
    """The JSON form of `value`; its tensors are appended to `blobs`."""
    if depth > MAX_DEPTH:
        raise UserError(f"value nested deeper than {MAX_DEPTH} tuples cannot be sent")
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise UserError("arrays of Python objects cannot be sent")
        buffer = io.BytesIO()
        np.save(buffer, value, allow_pickle=False)  # not ascontiguousarray: it makes a 0-d array 1-d
        blobs.append(buffer.getvalue())
        return {"tensor": len(blobs) - 1}
    if isinstance(value, ShapeTuple):
        return {"shape": [int(v) for v in value]}
    if isinstance(value, (tuple, list)):
        return {"tuple": [encode_value(item, blobs, depth + 1) for item in value]}
    if isinstance(value, float):
        return {"float": repr(value)}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if hasattr(value, "numpy"):  # a device tensor (cupy-backed): its host copy
        return encode_value(value.numpy(), blobs, depth)
    raise UserError(f"a value of type {type(value).__name__} cannot be sent over relax.rpc")


def decode_value(value, blobs: list[bytes], depth: int = 0):
    """The VM value of a JSON form made by encode_value; ProtocolError if it is malformed."""
    if depth > MAX_DEPTH:
        raise ProtocolError(f"value nested deeper than {MAX_DEPTH} tuples")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if not isinstance(value, dict) or len(value) != 1:
        raise ProtocolError(f"malformed value {str(value)[:60]}")
    (kind, body), = value.items()
    if kind == "tensor" and type(body) is int and 0 <= body < len(blobs):
        try:
            return read_npy(blobs[body], f"tensor {body}")
        except UserError as error:
            raise ProtocolError(str(error)) from None
    if kind == "shape" and isinstance(body, list) and all(type(v) is int for v in body):
        return ShapeTuple(body)
    if kind == "tuple" and isinstance(body, list):
        return tuple(decode_value(item, blobs, depth + 1) for item in body)
    if kind == "float" and isinstance(body, str):
        try:
            return float(body)
        except ValueError:
            pass
    raise ProtocolError(f"malformed value {str(value)[:60]}")
