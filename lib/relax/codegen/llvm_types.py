"""TIR data types as LLVM types, and typed constants.

Values in registers: bool is i1, intN/uintN are iN (signedness lives in the TIR
dtype, not the LLVM type), float16/32/64 are half/float/double, `xL` makes an
LLVM vector of L lanes. In memory a bool takes a byte (i8), as numpy stores it.
"""

from __future__ import annotations

import functools

import llvmlite.ir as ir

from ..diagnostics import UserError
from ..ir import dtype as dt

POINTER = ir.PointerType()
I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)

_FLOAT_TYPES = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}


def scalar_type(dtype: str) -> ir.Type:
    kind, bits, _ = dt.parse(dtype)
    if kind == "bool":
        return I1
    if kind in ("int", "uint") and bits in (8, 16, 32, 64):
        return ir.IntType(bits)
    if kind == "float" and bits in _FLOAT_TYPES:
        return _FLOAT_TYPES[bits]
    if kind == "handle":
        return POINTER
    raise UserError(f"codegen: data type '{dtype}' is not supported on CPU targets")


def value_type(dtype: str) -> ir.Type:
    """The LLVM type of a TIR value (a vector type for `xL` dtypes)."""
    lanes = dt.lanes(dtype)
    element = scalar_type(dt.element(dtype))
    return element if lanes == 1 else ir.VectorType(element, lanes)


def memory_type(dtype: str) -> ir.Type:
    """The LLVM type of one element as stored in a buffer."""
    element = I8 if dt.is_bool(dt.element(dtype)) else scalar_type(dt.element(dtype))
    lanes = dt.lanes(dtype)
    return element if lanes == 1 else ir.VectorType(element, lanes)


def alignment(dtype: str) -> int:
    """The natural alignment of one scalar element in bytes."""
    return dt.itemsize(dt.element(dtype))


def is_signed(dtype: str) -> bool:
    return dt.kind(dtype) == "int"


# constant's answers: one shared object per constant, so that llvmlite formats each once
# (it caches a value's text on the object). Bounded: emptied when full.
_CONSTANTS: dict[tuple, ir.Constant] = {}
_CONSTANTS_MAX = 1 << 14


def constant(dtype: str, value) -> ir.Constant:
    key = (dtype, value.__class__, repr(value))  # repr: -0.0 and 0.0, equal as keys, stay apart
    found = _CONSTANTS.get(key)
    if found is None:
        if len(_CONSTANTS) >= _CONSTANTS_MAX:
            _CONSTANTS.clear()
        found = _CONSTANTS[key] = _new_constant(dtype, value)
    return found


def _new_constant(dtype: str, value) -> ir.Constant:
    element = dt.element(dtype)
    scalar = scalar_type(element)
    if dt.is_float(element):
        item = ir.Constant(scalar, float(value))
    elif dt.is_bool(element):
        item = ir.Constant(scalar, int(bool(value)))
    else:
        bits = dt.bits(element)
        word = int(value) & ((1 << bits) - 1)
        item = ir.Constant(scalar, word - (1 << bits) if word >> (bits - 1) else word)
    lanes = dt.lanes(dtype)
    return item if lanes == 1 else ir.Constant(ir.VectorType(scalar, lanes), [item] * lanes)


def opaque(value: ir.Value) -> ir.Value:
    """`value` typed as an opaque `ptr` (llvmlite types allocas as typed pointers)."""
    value.type = POINTER
    return value


class _ShortVector(ir.Constant):
    """A vector constant printed in LLVM's short form (`undef`, `zeroinitializer`): llvmlite
    spells out every lane, and a tiled kernel has a splat in every step."""

    def __init__(self, vector_type: ir.VectorType, lanes, text: str):
        super().__init__(vector_type, lanes)
        self.text = text

    def _get_reference(self) -> str:
        return self.text


@functools.cache
def undef_vector(vector_type: ir.VectorType) -> ir.Constant:
    """`vector_type` undef (one shared constant per type: llvmlite caches its text)."""
    return _ShortVector(vector_type, ir.Undefined, "undef")


@functools.cache
def splat_mask(lanes: int) -> ir.Constant:
    """The shufflevector mask that copies lane 0 to every lane."""
    return _ShortVector(ir.VectorType(I32, lanes), [0] * lanes, "zeroinitializer")
