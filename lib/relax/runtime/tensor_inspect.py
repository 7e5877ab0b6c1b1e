"""Builtins that read or rewrite a tensor's DLTensor fields, not its data.

    vm.builtin.tensor_dtype_code / _bits / _lanes     the fields of the tensor's DLDataType
    vm.builtin.tensor_ndim, tensor_shape_i, tensor_stride_i
    vm.builtin.tensor_byte_offset, tensor_elem_offset
    runtime.TVMTensorCreateView                        R.memory.view: same bytes, new shape/dtype/offset
    vm.builtin.ensure_zero_offset                      R.memory.ensure_zero_offset: a copy when offset != 0

R.inspect.* legalize to the first group (TVM reads the DLTensor from host TIR; our
kernels only see compact buffers, so the VM answers instead), R.memory.view to the
view builtin under TVM's name.

Tensors are numpy (or cupy) arrays, which have no byte offset of their own: every
tensor has offset 0 except a view made by R.memory.view, whose offset (relative to
its source's offset, as in TVM) is remembered here for as long as the view lives.
Strides are always the compact row-major ones, in elements.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from .dtype import DataType
from .errors import VMError
from .objects import ShapeTuple
from .registry import register_func

# id(view) -> (weak reference to the view, its byte offset); an entry goes when its view dies.
_VIEW_OFFSETS: dict[int, tuple[weakref.ref, int]] = {}


def _tensor(value, who: str):
    if not hasattr(value, "shape") or not hasattr(value, "dtype") or isinstance(value, tuple):
        raise VMError(f"{who} expects a Tensor, got {type(value).__name__}")
    return value


# TVM 0.27 stores a bool tensor's dtype as DLPack's kDLBool (code 6) in 8 bits.
_BOOL_FIELDS = (6, 8, 1)


def _dtype_fields(tensor) -> tuple[int, int, int]:
    """The tensor's DLDataType (code, bits, lanes), as TVM's runtime holds it."""
    if np.dtype(tensor.dtype) == np.bool_:
        return _BOOL_FIELDS
    dtype = DataType.from_numpy(np.dtype(tensor.dtype))
    return dtype.code, dtype.bits, dtype.lanes


def byte_offset(tensor) -> int:
    """The tensor's DLTensor byte_offset: non-zero only for views made by R.memory.view."""
    entry = _VIEW_OFFSETS.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return 0
    return entry[1]


def _remember_offset(view, offset: int) -> None:
    if offset == 0:
        return
    key = id(view)
    _VIEW_OFFSETS[key] = (weakref.ref(view, lambda _ref: _VIEW_OFFSETS.pop(key, None)), offset)


def tensor_dtype_code(tensor) -> int:
    return _dtype_fields(_tensor(tensor, "tensor_dtype_code"))[0]


def tensor_dtype_bits(tensor) -> int:
    return _dtype_fields(_tensor(tensor, "tensor_dtype_bits"))[1]


def tensor_dtype_lanes(tensor) -> int:
    return _dtype_fields(_tensor(tensor, "tensor_dtype_lanes"))[2]


def tensor_ndim(tensor) -> int:
    return len(_tensor(tensor, "tensor_ndim").shape)


def _axis(tensor, axis, who: str) -> int:
    axis = int(axis)
    if axis < 0:
        raise VMError(f"{who}: specified axis may not be negative, got {axis}")
    if axis >= len(tensor.shape):
        raise VMError(f"{who}: specified axis may not be larger than the tensor's dimensionality: "
                      f"axis {axis}, ndim {len(tensor.shape)}")
    return axis


def tensor_shape_i(tensor, axis) -> int:
    tensor = _tensor(tensor, "tensor_shape_i")
    return int(tensor.shape[_axis(tensor, axis, "tensor_shape_i")])


def tensor_stride_i(tensor, axis) -> int:
    tensor = _tensor(tensor, "tensor_stride_i")
    axis = _axis(tensor, axis, "tensor_stride_i")
    return math.prod(int(d) for d in tensor.shape[axis + 1:])


def tensor_byte_offset(tensor) -> int:
    return byte_offset(_tensor(tensor, "tensor_byte_offset"))


def tensor_elem_offset(tensor) -> int:
    tensor = _tensor(tensor, "tensor_elem_offset")
    _, bits, lanes = _dtype_fields(tensor)
    return byte_offset(tensor) // ((bits * lanes + 7) // 8)


def create_view(tensor, shape, dtype, relative_byte_offset=0):
    """A tensor over bytes [offset, offset + size) of `tensor`'s own bytes, with a new
    shape and dtype; it may not reach past the bytes `tensor` can reach."""
    tensor = _tensor(tensor, "R.memory.view")
    # A shape or dtype not given comes as an empty Relax tuple (a ShapeTuple is a shape).
    shape = tuple(int(v) for v in shape) if isinstance(shape, ShapeTuple) else tuple(tensor.shape)
    if isinstance(dtype, tuple):
        element = np.dtype(tensor.dtype)
    else:
        element = (DataType.parse(dtype) if isinstance(dtype, str) else dtype).numpy
    offset = int(relative_byte_offset)
    nbytes = math.prod(shape) * element.itemsize
    available = tensor.size * tensor.dtype.itemsize
    if offset < 0 or offset + nbytes > available:
        raise VMError(f"R.memory.view: a view of {nbytes} bytes at byte offset {offset} does not fit in "
                      f"the {available} bytes of a tensor of shape {tuple(tensor.shape)} and dtype {tensor.dtype}")
    flat = tensor.reshape(-1).view(np.uint8)
    view = flat[offset:offset + nbytes].view(element).reshape(shape)
    _remember_offset(view, byte_offset(tensor) + offset)
    return view


def ensure_zero_offset(tensor):
    """The tensor itself when its byte offset is 0 (and it is compact), else a compact copy."""
    if byte_offset(tensor) == 0 and getattr(tensor, "flags", None) is not None and tensor.flags.c_contiguous:
        return tensor
    copy = tensor.copy()
    return copy if copy.flags.c_contiguous else np.ascontiguousarray(copy)


TENSOR_BUILTINS = {
    "vm.builtin.tensor_dtype_code": tensor_dtype_code,
    "vm.builtin.tensor_dtype_bits": tensor_dtype_bits,
    "vm.builtin.tensor_dtype_lanes": tensor_dtype_lanes,
    "vm.builtin.tensor_ndim": tensor_ndim,
    "vm.builtin.tensor_shape_i": tensor_shape_i,
    "vm.builtin.tensor_stride_i": tensor_stride_i,
    "vm.builtin.tensor_byte_offset": tensor_byte_offset,
    "vm.builtin.tensor_elem_offset": tensor_elem_offset,
    "runtime.TVMTensorCreateView": create_view,
    "vm.builtin.ensure_zero_offset": ensure_zero_offset,
}

for _name, _func in TENSOR_BUILTINS.items():
    register_func(_name, _func, override=True)
