"""Data types as the runtime sees them: DLPack's (code, bits, lanes) with TVM's spelling.

A dtype travels through the VM as a constant (`alloc_tensor` takes one) and through
files as three numbers. The text form is TVM's: `float32`, `int64`, `bool`,
`float32x4`, `handle`, `void`. Tensors themselves are numpy arrays, so the dtypes a
tensor may have are the ones numpy has (bfloat16 exists as a dtype value only).
"""

from __future__ import annotations

import re

import numpy as np

from ..diagnostics import UserError
from ..records import record

# DLPack type codes (dlpack.h: kDLInt, kDLUInt, kDLFloat, kDLOpaqueHandle, kDLBfloat).
INT, UINT, FLOAT, HANDLE, BFLOAT = 0, 1, 2, 3, 4
_CODE_NAMES = {INT: "int", UINT: "uint", FLOAT: "float", BFLOAT: "bfloat"}
_NAME_CODES = {name: code for code, name in _CODE_NAMES.items()}
_PATTERN = re.compile(r"(int|uint|float|bfloat)(\d+)(?:x(\d+))?")


@record
class DataType:
    """A DLPack data type; `str()` gives TVM's name for it."""

    code: int
    bits: int
    lanes: int = 1

    @staticmethod
    def parse(text: str) -> "DataType":
        if text == "bool":
            return DataType(UINT, 1)
        if text == "handle":
            return DataType(HANDLE, 64)
        if text == "void":
            return DataType(HANDLE, 0, 0)
        match = _PATTERN.fullmatch(text)
        if match is None:
            raise UserError(f"unknown data type '{text[:40]}'")
        bits, lanes = match.group(2), match.group(3) or "1"
        # DLPack holds the bits in 8 bits and the lanes in 16; the lengths are checked before
        # int() reads the digits (Python refuses to convert more than 4300)
        if len(bits) > 3 or len(lanes) > 5 or int(bits) > 255 or int(lanes) > 65535:
            raise UserError(f"unknown data type '{text[:40]}': at most 255 bits and 65535 lanes")
        return DataType(_NAME_CODES[match.group(1)], int(bits), int(lanes))

    @staticmethod
    def parse_or_none(text: str) -> "DataType | None":
        try:
            return DataType.parse(text)
        except UserError:
            return None

    @staticmethod
    def from_numpy(dtype) -> "DataType":
        dtype = np.dtype(dtype)
        if dtype == np.bool_:
            return DataType(UINT, 1)
        code = {"i": INT, "u": UINT, "f": FLOAT}.get(dtype.kind)
        if code is None:
            raise UserError(f"numpy dtype '{dtype}' has no relax equivalent")
        return DataType(code, dtype.itemsize * 8)

    def __str__(self) -> str:
        if self.code == HANDLE:
            return "void" if self.bits == 0 and self.lanes == 0 else "handle"
        if self.code == UINT and self.bits == 1 and self.lanes == 1:
            return "bool"
        name = f"{_CODE_NAMES.get(self.code, f'code{self.code}_')}{self.bits}"
        return name if self.lanes == 1 else f"{name}x{self.lanes}"

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype of tensors with this element type."""
        if self.lanes == 1:
            if self.code == UINT and self.bits == 1:
                return np.dtype(np.bool_)
            letter = {INT: "i", UINT: "u", FLOAT: "f"}.get(self.code)
            if letter is not None and self.bits in (8, 16, 32, 64) and not (letter == "f" and self.bits == 8):
                return np.dtype(f"<{letter}{self.bits // 8}")
        raise UserError(f"data type '{self}' cannot be held in a tensor")

    @property
    def has_numpy(self) -> bool:
        try:
            self.numpy
        except UserError:
            return False
        return True


def dtype_name(array: np.ndarray) -> str:
    """TVM's name for the dtype of a numpy array (`bool`, `float32`, ...)."""
    return str(DataType.from_numpy(array.dtype))
