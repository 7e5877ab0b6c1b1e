"""The runtime values that live in VM registers, besides numpy arrays, ints and strs.

    tensor        numpy.ndarray, C-contiguous, row-major
    shape tuple   ShapeTuple (a tuple of ints, kept apart from Relax tuples)
    Relax tuple   a plain Python tuple
    string        str
    closure       Closure (a function plus the arguments bound to its end)
    storage       Storage (a raw buffer that tensors are carved from)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


class ShapeTuple(tuple):
    """A shape: a tuple of Python ints. Distinct from a Relax tuple (a plain tuple)."""

    __slots__ = ()

    def __new__(cls, values=()):
        return super().__new__(cls, (int(v) for v in values))

    def __repr__(self) -> str:
        return f"ShapeTuple({list(self)})"


class Closure:
    """A callable value: a VM function or packed function with arguments bound last.

    `func_index` is set for bytecode functions so that the VM can call them without
    going through Python recursion; `impl` is set for packed functions.
    """

    __slots__ = ("func_name", "func_index", "impl", "bound_args")

    def __init__(self, func_name: str, func_index: int | None = None,
                 impl: Callable | None = None, bound_args: tuple = ()):
        self.func_name = func_name
        self.func_index = func_index
        self.impl = impl
        self.bound_args = tuple(bound_args)

    def bind_last_args(self, extra: tuple) -> "Closure":
        """TVM's VMClosure::BindLastArgs: a closure that appends `extra` to every call."""
        return Closure(self.func_name, self.func_index, self.impl, self.bound_args + tuple(extra))

    def __repr__(self) -> str:
        bound = f", bound={len(self.bound_args)}" if self.bound_args else ""
        return f"Closure({self.func_name}{bound})"


class Storage:
    """A block of device memory from an allocator; `alloc_tensor` makes views into it."""

    __slots__ = ("buffer", "device", "__weakref__")

    def __init__(self, buffer: np.ndarray, device: Any):
        self.buffer = buffer  # uint8, aligned, C-contiguous
        self.device = device

    @property
    def nbytes(self) -> int:
        return self.buffer.nbytes

    def __repr__(self) -> str:
        return f"Storage({self.nbytes} bytes on {self.device})"


def type_key(value: Any) -> str:
    """A short name for the kind of a runtime value, for error messages."""
    if isinstance(value, np.ndarray):
        return "Tensor"
    if isinstance(value, ShapeTuple):
        return "Shape"
    if isinstance(value, tuple):
        return "Tuple"
    if isinstance(value, str):
        return "String"
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, (int, np.integer)):
        return "Int"
    if isinstance(value, (float, np.floating)):
        return "Float"
    if isinstance(value, Closure) or callable(value):
        return "Function"
    if value is None:
        return "None"
    if isinstance(value, Storage):
        return "Storage"
    return type(value).__name__
