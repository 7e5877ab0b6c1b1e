"""Constant-pool values: what may be a constant, its canonical form, its binary encoding.

A constant is one of: a tensor (numpy array of a dtype numpy holds, float16 and bool
included), a ShapeTuple, a str, an int (int64), a float, a bool, a DataType, None,
or a tuple of constants (nested). The tags 0..5 are TVM's ConstantType values;
6..8 are this toolchain's additions. Layout of one value (little-endian):

    u8 tag, then
    0 tensor  u8 code, u8 bits, u16 lanes, u32 ndim, ndim x i64 shape, u64 nbytes, data
    1 dtype   u8 code, u8 bits, u16 lanes
    2 shape   u64 n, n x i64
    3 string  u64 n, n bytes of UTF-8
    4 int     i64
    5 float   f64
    6 tuple   u64 n, n values
    7 null    (nothing)
    8 bool    u8 (0 or 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...diagnostics import UserError
from ...runtime.allocator import aligned_array, is_aligned
from ...runtime.dtype import DataType
from ...runtime.objects import ShapeTuple
from .binary import Reader, Writer

TENSOR, DTYPE, SHAPE, STRING, INT, FLOAT, TUPLE, NULL, BOOL = range(9)
MAX_NESTING = 32
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def canonical_constant(value: Any, depth: int = 0) -> Any:
    """The form in which `value` is kept in the pool; refuses what cannot be a constant.

    Tensors become read-only, C-contiguous, little-endian and aligned (allocator.aligned_array)
    copies, so that nothing that runs can change a constant and the file bytes do not
    depend on the host; a tensor that is all of these already, and that nothing can
    write through (its bases read-only too), is kept as it is.
    """
    if depth > MAX_NESTING:
        raise UserError(f"constant nests deeper than {MAX_NESTING} tuples")
    if isinstance(value, np.ndarray):
        return _canonical_tensor(value)
    if isinstance(value, ShapeTuple):
        return value
    if isinstance(value, DataType):
        return value
    if isinstance(value, np.dtype):
        return DataType.from_numpy(value)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise UserError("a string constant must be valid Unicode (it holds a lone surrogate)") from None
        return value
    if value is None:
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        if not INT64_MIN <= int(value) <= INT64_MAX:
            raise UserError(f"integer constant {value} does not fit in 64 bits")
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, tuple):
        return tuple(canonical_constant(item, depth + 1) for item in value)
    raise UserError(f"a {type(value).__name__} cannot be a VM constant")


def _canonical_tensor(value: np.ndarray) -> np.ndarray:
    dtype = DataType.from_numpy(value.dtype).numpy
    if value.dtype == dtype and value.flags.c_contiguous and is_aligned(value) and _immutable(value):
        return value
    array = aligned_array(value.shape, dtype, zeroed=False)
    array[...] = value
    array.flags.writeable = False
    return array


def _immutable(array: np.ndarray) -> bool:
    """Whether no one can write `array`'s data: it and every array it views are read-only,
    down to data it owns or an immutable bytes object."""
    while isinstance(array, np.ndarray):
        if array.flags.writeable:
            return False
        array = array.base
    return array is None or isinstance(array, bytes)


def constant_key(value: Any) -> tuple:
    """A hashable identity of a canonical constant, for deduplication (exact bits)."""
    if isinstance(value, np.ndarray):
        return (TENSOR, str(value.dtype), value.shape, _TensorBytes(value))
    if isinstance(value, ShapeTuple):
        return (SHAPE, tuple(value))
    if isinstance(value, DataType):
        return (DTYPE, value)
    if isinstance(value, bool):
        return (BOOL, value)
    if isinstance(value, int):
        return (INT, value)
    if isinstance(value, float):
        return (FLOAT, np.float64(value).tobytes())
    if isinstance(value, str):
        return (STRING, value)
    if value is None:
        return (NULL,)
    return (TUPLE, tuple(constant_key(item) for item in value))


def write_constant(out: Writer, value: Any) -> None:
    if isinstance(value, np.ndarray):
        dtype = DataType.from_numpy(value.dtype)
        out.u8(TENSOR)
        _write_dtype(out, dtype)
        out.u32(value.ndim)
        for extent in value.shape:
            out.i64(extent)
        data = _byte_view(value.astype(dtype.numpy, copy=False))
        out.u64(len(data))
        out.raw(data)  # the array's own bytes, copied once, into the file
    elif isinstance(value, DataType):
        out.u8(DTYPE)
        _write_dtype(out, value)
    elif isinstance(value, ShapeTuple):
        out.u8(SHAPE)
        out.i64_array(list(value))
    elif isinstance(value, str):
        out.u8(STRING)
        out.string(value)
    elif isinstance(value, bool):
        out.u8(BOOL)
        out.u8(int(value))
    elif isinstance(value, int):
        out.u8(INT)
        out.i64(value)
    elif isinstance(value, float):
        out.u8(FLOAT)
        out.f64(value)
    elif value is None:
        out.u8(NULL)
    elif isinstance(value, tuple):
        out.u8(TUPLE)
        out.u64(len(value))
        for item in value:
            write_constant(out, item)
    else:
        raise UserError(f"a {type(value).__name__} cannot be a VM constant")


class _TensorBytes:
    """A tensor's bytes as part of a dict key: equal when equal byte for byte, hashed by their
    length and three samples. A weight may be hundreds of megabytes: the key neither copies
    nor hashes it whole; the same buffer is equal at once, and others with an equal hash are
    compared whole."""

    __slots__ = ("data", "address", "_hash")
    SAMPLE = 64

    def __init__(self, array: np.ndarray):
        self.data = _byte_view(array)
        self.address = array.__array_interface__["data"][0]
        size, sample = len(self.data), self.SAMPLE
        self._hash = hash((size, bytes(self.data[:sample]), bytes(self.data[size // 2:size // 2 + sample]),
                           bytes(self.data[-sample:])))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if not isinstance(other, _TensorBytes) or self._hash != other._hash or len(self.data) != len(other.data):
            return False
        if self.address == other.address:
            return True
        return bool(np.array_equal(np.frombuffer(self.data, np.uint8), np.frombuffer(other.data, np.uint8)))


def _byte_view(array: np.ndarray) -> memoryview:
    """The bytes of `array` in C order, without a copy where it is C-contiguous (a canonical constant)."""
    return memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def _write_dtype(out: Writer, dtype: DataType) -> None:
    out.u8(dtype.code)
    out.u8(dtype.bits)
    out.u16(dtype.lanes)


def read_constant(reader: Reader, depth: int = 0, views: bool = False) -> Any:
    """The next constant of `reader`; tensors as aligned copies to run with, or (`views`) as
    read-only views of the reader's bytes, for a reader that only inspects (the linker)."""
    if depth > MAX_NESTING:
        raise reader.fail(f"constant nests deeper than {MAX_NESTING} tuples")
    tag = reader.u8()
    if tag == TENSOR:
        return _read_tensor(reader, views)
    if tag == DTYPE:
        return DataType(reader.u8(), reader.u8(), reader.u16())
    if tag == SHAPE:
        return ShapeTuple(reader.i64_array("shape"))
    if tag == STRING:
        return reader.string("string constant")
    if tag == INT:
        return reader.i64()
    if tag == FLOAT:
        return reader.f64()
    if tag == BOOL:
        flag = reader.u8()
        if flag > 1:
            raise reader.fail(f"bad bool constant {flag}")
        return bool(flag)
    if tag == NULL:
        return None
    if tag == TUPLE:
        count = reader.count(1, "tuple")
        return tuple(read_constant(reader, depth + 1, views) for _ in range(count))
    raise reader.fail(f"unknown constant tag {tag}")


def _read_tensor(reader: Reader, views: bool = False) -> np.ndarray:
    dtype = DataType(reader.u8(), reader.u8(), reader.u16())
    if not dtype.has_numpy:
        raise reader.fail(f"tensor constant of unsupported dtype '{dtype}'")
    ndim = reader.u32()
    if ndim > 64:
        raise reader.fail(f"tensor constant with {ndim} dimensions")
    shape = tuple(reader.i64() for _ in range(ndim))
    if any(extent < 0 for extent in shape):
        raise reader.fail(f"tensor constant with negative shape {shape}")
    nbytes = reader.u64()
    elements = 1
    for extent in shape:
        elements *= extent
    if nbytes != elements * dtype.numpy.itemsize:
        raise reader.fail(f"tensor constant of shape {shape} and dtype {dtype} has {nbytes} bytes")
    try:
        if views:
            array = np.frombuffer(reader.take(nbytes), dtype=np.uint8).view(dtype.numpy).reshape(shape)
        else:
            array = aligned_array(shape, dtype.numpy, zeroed=False)
            array.reshape(-1).view(np.uint8)[:] = np.frombuffer(reader.take(nbytes), dtype=np.uint8)
    except ValueError as error:  # an empty tensor with absurd extents
        raise reader.fail(f"tensor constant of shape {shape}: {error}") from None
    array.flags.writeable = False
    if dtype.numpy == np.bool_ and array.view(np.uint8).max(initial=0) > 1:
        raise reader.fail("bool tensor constant holds a byte other than 0 or 1")
    return array
