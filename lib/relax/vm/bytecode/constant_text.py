"""Constants as listing text, and back: the `.constants` section of a .vmasm listing.

    null | bool true | int 5 | float 0.5 | str "text" | dtype float32 | shape [2, 3]
    tensor float32 [2, 2] = [[1.0, 2.0], [3.0, 4.0]]
    tensor float16 [4096] base64 AAA...      (large tensors, or values that print inexactly)
    tuple (int 1, shape [2], tuple ())

Every form reads back to exactly the same bits: values are printed in numpy's
shortest round-trip form and checked; anything that would not come back exactly is
written as base64 of its little-endian bytes. Integers are range-checked for where
they go (an int or shape value in 64 bits, a tensor element in its dtype, a dtype's
code and bits in 8, its lanes in 16) before anything is built from them.
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
from typing import Any

import numpy as np

from ...runtime.dtype import DataType
from ...runtime.objects import ShapeTuple
from .constant_pool import MAX_NESTING, canonical_constant

MAX_PRINTED_ELEMENTS = 256
INT64 = (-(1 << 63), (1 << 63) - 1)
MAX_TENSOR_RANK = 64  # numpy's NPY_MAXDIMS: tensor values nest in at most this many brackets


class ConstantSyntaxError(ValueError):
    def __init__(self, message: str, column: int):
        super().__init__(message)
        self.column = column


# ---- printing ----------------------------------------------------------------------------

def format_constant(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"bool {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"int {value}"
    if isinstance(value, float):
        return f"float {_format_float(value)}"
    if isinstance(value, str):
        return f"str {json.dumps(value)}"
    if isinstance(value, DataType):
        return f"dtype {value}" if DataType.parse_or_none(str(value)) == value else (
            f"dtype code={value.code} bits={value.bits} lanes={value.lanes}")
    if isinstance(value, ShapeTuple):
        return f"shape [{', '.join(str(v) for v in value)}]"
    if isinstance(value, np.ndarray):
        return _format_tensor(value)
    if isinstance(value, tuple):
        return f"tuple ({', '.join(format_constant(item) for item in value)})"
    raise TypeError(f"not a constant: {type(value).__name__}")


def _format_float(value: float) -> str:
    text = repr(value)
    if math.isnan(value) and struct.pack("<d", value) != struct.pack("<d", float("nan")):
        return "bits:" + struct.pack("<d", value).hex()
    return text


def _format_tensor(array: np.ndarray) -> str:
    head = f"tensor {DataType.from_numpy(array.dtype)} [{', '.join(str(v) for v in array.shape)}]"
    if array.size <= MAX_PRINTED_ELEMENTS:
        text = _nested(array)
        try:
            if _parse_values(text, array.dtype, array.shape).tobytes() == array.tobytes():
                return f"{head} = {text}"
        except (ValueError, OverflowError):
            pass
    return f"{head} base64 {base64.b64encode(array.tobytes()).decode('ascii')}"


def _element(value) -> str:
    if isinstance(value, np.bool_):
        return "true" if value else "false"
    return str(value)


def _nested(array: np.ndarray) -> str:
    if array.size == 0:
        return "[]"
    if array.ndim == 0:
        return _element(array[()])
    return "[" + ", ".join(_nested(item) for item in array) + "]"


# ---- parsing -----------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|([\[\](),=])|([A-Za-z0-9_.+\-:/]+))')


class _Scanner:
    def __init__(self, text: str, column: int):
        self.text = text
        self.pos = 0
        self.column = column  # column of text[0] in the source line, for diagnostics

    def error(self, message: str) -> ConstantSyntaxError:
        return ConstantSyntaxError(message, self.column + self.pos)

    def peek(self) -> str | None:
        match = _TOKEN.match(self.text, self.pos)
        return match.group(0).strip() if match and match.group(0).strip() else None

    def next(self, what: str = "a value") -> str:
        match = _TOKEN.match(self.text, self.pos)
        if not match or not match.group(0).strip():
            raise self.error(f"expected {what}")
        self.pos = match.end()
        return match.group(0).strip()

    def expect(self, token: str) -> None:
        start = self.pos
        if self.next(f"'{token}'") != token:
            self.pos = start
            raise self.error(f"expected '{token}'")

    def rest_word(self) -> str:
        match = re.compile(r"\s*([A-Za-z0-9+/=]*)").match(self.text, self.pos)
        self.pos = match.end()
        return match.group(1)

    def at_end(self) -> bool:
        return not self.text[self.pos:].strip()


def parse_constant(text: str, column: int = 1) -> Any:
    scanner = _Scanner(text, column)
    value = _parse(scanner, 0)
    if not scanner.at_end():
        raise scanner.error("unexpected text after the constant")
    return canonical_constant(value)


def _parse(scanner: _Scanner, depth: int) -> Any:
    if depth > MAX_NESTING:
        raise scanner.error("constant nests too deeply")
    start = scanner.pos
    keyword = scanner.next("a constant kind (int, float, str, dtype, shape, tensor, tuple, bool, null)")
    parse = _PARSERS.get(keyword)
    if parse is None:
        scanner.pos = start
        raise scanner.error(f"unknown constant kind '{keyword}'")
    try:
        return parse(scanner, depth)
    except (ValueError, struct.error, json.JSONDecodeError) as error:
        if isinstance(error, ConstantSyntaxError):
            raise
        scanner.pos = start
        raise scanner.error(f"bad {keyword} constant: {error}") from None


def _parse_bool(scanner: _Scanner) -> bool:
    word = scanner.next("true or false")
    if word not in ("true", "false"):
        raise scanner.error("expected true or false")
    return word == "true"


def _parse_float(scanner: _Scanner) -> float:
    word = scanner.next("a float")
    if word.startswith("bits:"):
        return struct.unpack("<d", bytes.fromhex(word[5:]))[0]
    return float(word)


def bounded_int(word: str, limits: tuple[int, int] = INT64, what: str = "64 bits") -> int:
    """The integer `word` within `limits`, else a ValueError saying so. The characters are
    counted before int() reads them: Python refuses to convert more than 4300 digits."""
    value = int(word) if len(word) <= 24 else None
    if value is None or not limits[0] <= value <= limits[1]:
        shown = word if len(word) <= 24 else f"{word[:20]}... ({len(word)} characters)"
        raise ValueError(f"{shown} does not fit in {what}")
    return value


def _parse_str(scanner: _Scanner) -> str:
    word = scanner.next("a string")
    if not word.startswith('"'):
        raise scanner.error("expected a quoted string")
    return json.loads(word)


def _parse_dtype(scanner: _Scanner) -> DataType:
    word = scanner.next("a dtype")
    if word.startswith("code"):
        scanner.expect("=")
        code = bounded_int(scanner.next(), (0, 255), "a dtype code (8 bits)")
        scanner.expect("bits")
        scanner.expect("=")
        bits = bounded_int(scanner.next(), (0, 255), "a dtype's bits (8 bits)")
        scanner.expect("lanes")
        scanner.expect("=")
        return DataType(code, bits, bounded_int(scanner.next(), (0, 65535), "a dtype's lanes (16 bits)"))
    dtype = DataType.parse_or_none(word)
    if dtype is None:
        raise scanner.error(f"unknown dtype '{word[:40]}'")
    return dtype


def _parse_int_list(scanner: _Scanner) -> list[int]:
    scanner.expect("[")
    values = []
    while scanner.peek() != "]":
        if values:
            scanner.expect(",")
        values.append(bounded_int(scanner.next("an integer")))
    scanner.expect("]")
    return values


def _parse_tensor(scanner: _Scanner) -> np.ndarray:
    dtype = _parse_dtype(scanner)
    if not dtype.has_numpy:
        raise scanner.error(f"a tensor cannot have dtype {dtype}")
    shape = tuple(_parse_int_list(scanner))
    if any(extent < 0 for extent in shape):
        raise scanner.error("negative tensor extent")
    word = scanner.next("'=' or 'base64'")
    if word == "base64":
        data = base64.b64decode(scanner.rest_word(), validate=True)
        if len(data) != math.prod(shape) * dtype.numpy.itemsize:
            raise scanner.error(f"base64 data has {len(data)} bytes, the tensor needs "
                                f"{math.prod(shape) * dtype.numpy.itemsize}")
        return np.frombuffer(data, dtype=dtype.numpy).reshape(shape)
    if word != "=":
        raise scanner.error("expected '=' or 'base64'")
    start = scanner.pos
    depth, end = 0, start
    for end in range(start, len(scanner.text) + 1):
        if end == len(scanner.text):
            break
        char = scanner.text[end]
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if depth == 0 and char in ",)" and scanner.text[start:end].strip():
            break
    text = scanner.text[start:end]
    scanner.pos = end
    return _parse_values(text, dtype.numpy, shape)


def _parse_values(text: str, dtype: np.dtype, shape: tuple) -> np.ndarray:
    if math.prod(shape) == 0 and text.strip() == "[]":
        return np.zeros(shape, dtype=dtype)
    words = re.findall(r"[\[\]]|[^\s,\[\]]+", text)
    nested, end = _nest(words, 0)
    if end != len(words):
        raise ValueError("unexpected values after the tensor's values")
    if dtype == np.bool_:
        convert = {"true": True, "false": False}.__getitem__
    elif dtype.kind == "f":
        convert = float
    else:
        limits = np.iinfo(dtype)
        convert = lambda word: bounded_int(word, (int(limits.min), int(limits.max)), str(dtype))  # noqa: E731
    array = np.array(_map(nested, convert), dtype=dtype)
    if array.shape != tuple(shape):
        raise ValueError(f"values have shape {array.shape}, expected {tuple(shape)}")
    return array


def _nest(words: list[str], position: int, depth: int = 0):
    if position >= len(words):
        raise ValueError("missing values")
    if words[position] != "[":
        return words[position], position + 1
    if depth == MAX_TENSOR_RANK:
        raise ValueError(f"values nest deeper than {MAX_TENSOR_RANK} brackets (the most dimensions a tensor has)")
    items, position = [], position + 1
    while position < len(words) and words[position] != "]":
        item, position = _nest(words, position, depth + 1)
        items.append(item)
    if position >= len(words):
        raise ValueError("unbalanced brackets")
    return items, position + 1


def _map(nested, convert):
    if isinstance(nested, list):
        return [_map(item, convert) for item in nested]
    try:
        return convert(nested)
    except KeyError:
        raise ValueError(f"bad value '{nested}'") from None


def _parse_tuple(scanner: _Scanner, depth: int) -> tuple:
    scanner.expect("(")
    items = []
    while scanner.peek() != ")":
        if items:
            scanner.expect(",")
        items.append(_parse(scanner, depth + 1))
    scanner.expect(")")
    return tuple(items)


# The reader of each constant kind, by the keyword that starts it.
_PARSERS = {
    "null": lambda scanner, depth: None,
    "bool": lambda scanner, depth: _parse_bool(scanner),
    "int": lambda scanner, depth: bounded_int(scanner.next("an integer")),
    "float": lambda scanner, depth: _parse_float(scanner),
    "str": lambda scanner, depth: _parse_str(scanner),
    "dtype": lambda scanner, depth: _parse_dtype(scanner),
    "shape": lambda scanner, depth: ShapeTuple(_parse_int_list(scanner)),
    "tensor": lambda scanner, depth: _parse_tensor(scanner),
    "tuple": _parse_tuple,
}
