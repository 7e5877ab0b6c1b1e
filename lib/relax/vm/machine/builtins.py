"""The vm.builtin.* functions, named and called as in TVM, registered in the global registry.

The BUILTINS table is the vocabulary: name -> function. Functions that need the VM
take it first (the bytecode passes %vm). A check that fails raises a VMError whose
message starts with the error context the code generator put in the constant pool,
in words (it names the function and the parameter: `_context`), then says what was
expected and what came.

Shape matching codes (MatchShapeCode): 0 assert equal to immediate, 1 store to heap,
2 no-op, 3 assert equal to a heap value. Shape making codes (MakeShapeCode): 0 use
immediate, 1 load from heap.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ...runtime.dtype import DataType
from ...runtime.errors import VMError
from ...runtime.objects import Closure, ShapeTuple, Storage, type_key
from ...runtime import host_ops  # noqa: F401 - registers relax.run.* (sorting, unique, nonzero)
from ...runtime.tensor_inspect import ensure_zero_offset  # also registers the R.inspect builtins
from ...runtime import disco_builtins  # noqa: F401 - registers runtime.disco.* (collectives, worker id)
from ...runtime.registry import register_func
from ...runtime.cuda.tensors import is_device_array
from .broadcast import BROADCAST_BUILTINS
from .py_functions import PY_FUNC_BUILTINS

ASSERT_EQUAL_TO_IMM, STORE_TO_HEAP, NO_OP, ASSERT_EQUAL_TO_LOAD = range(4)
USE_IMM, LOAD_SHAPE = range(2)


# The error context vm_shape_lower (and TVM) writes into the constant pool:
# ErrorContext(fn=main, loc=param[0], param=x, annotation=R.Tensor((n, 4), dtype="float32"))
_ERROR_CONTEXT = re.compile(r"ErrorContext\(fn=(?P<fn>[^,]*), loc=(?P<loc>[^,]*)(?:, (?:param|var)=(?P<name>[^,]*))?"
                            r", annotation=(?P<annotation>.*)\)\s*", re.DOTALL)


def _context(err_ctx) -> str:
    """What a check's message starts with: where the value came from, in words
    ("function 'main', parameter 'x' (R.Tensor((n, 4), dtype="float32")): "); an
    error context of another form as it is."""
    match = _ERROR_CONTEXT.fullmatch(err_ctx) if isinstance(err_ctx, str) else None
    if match is None:
        return f"{err_ctx} " if err_ctx else ""
    name, annotation = match["name"], match["annotation"]
    if match["loc"].startswith("param[") and name:
        where = f"parameter '{name}' ({annotation})"
    elif match["loc"] == "match_cast" and name:
        where = f"match_cast of '{name}' to {annotation}"
    elif match["loc"] == "return":
        where = f"its result ({annotation})"
    else:
        where = f"{match['loc']} ({annotation})"
    return f"function '{match['fn']}', {where}: "


def data_type(value) -> DataType:
    if isinstance(value, DataType):
        return value
    if isinstance(value, str):
        return DataType.parse(value)
    return DataType.from_numpy(value)


def _heap_slot(heap, index: int, err_ctx) -> int:
    if heap is None:
        raise VMError(f"{_context(err_ctx)}the shape heap is needed but none was allocated")
    if not 0 <= index < len(heap):
        raise VMError(f"{_context(err_ctx)}shape heap index {index} is outside the heap "
                      f"(size {len(heap)})")
    return index


# ---- shapes and struct info ------------------------------------------------------------------

def alloc_shape_heap(vm, size: int) -> np.ndarray:
    return np.zeros(int(size), dtype=np.int64)


def match_shape(value, heap, size: int, *codes):
    err_ctx = codes[2 * size] if len(codes) > 2 * size else None
    shape = value.shape if isinstance(value, np.ndarray) else value
    if not isinstance(shape, tuple):
        if not is_device_array(value):
            raise VMError(f"{_context(err_ctx)}match_cast expects a Tensor or Shape, got {type_key(value)}")
        shape = value.shape  # a tensor on the GPU
    if len(shape) != size:
        raise VMError(f"{_context(err_ctx)}match_cast shape size mismatch: "
                      f"expected {size} dimensions, got {len(shape)} (shape {tuple(shape)})")
    for axis in range(size):
        code, operand = codes[2 * axis], codes[2 * axis + 1]
        actual = int(shape[axis])
        if code == ASSERT_EQUAL_TO_IMM:
            if actual != operand:
                raise VMError(f"{_context(err_ctx)}match_cast error: shape[{axis}] mismatch to "
                              f"specified constant: expected {operand}, got {actual} (shape {tuple(shape)})")
        elif code == STORE_TO_HEAP:
            heap[_heap_slot(heap, operand, err_ctx)] = actual
        elif code == ASSERT_EQUAL_TO_LOAD:
            expected = int(heap[_heap_slot(heap, operand, err_ctx)])
            if actual != expected:
                raise VMError(f"{_context(err_ctx)}match_cast error: shape[{axis}] mismatch to "
                              f"a previous populated value: expected {expected}, got {actual} "
                              f"(shape {tuple(shape)})")
        elif code != NO_OP:
            raise VMError(f"unknown match_shape code {code}")


def make_shape(heap, size: int, *codes) -> ShapeTuple:
    values = []
    for axis in range(size):
        code, operand = codes[2 * axis], codes[2 * axis + 1]
        if code == USE_IMM:
            values.append(operand)
        elif code == LOAD_SHAPE:
            values.append(int(heap[_heap_slot(heap, operand, None)]))
        else:
            raise VMError(f"unknown make_shape code {code}")
    return ShapeTuple(values)


def match_prim_value(value, heap, code: int, operand: int, err_ctx=None) -> None:
    value = int(value)
    if code == ASSERT_EQUAL_TO_IMM:
        if value != operand:
            raise VMError(f"{_context(err_ctx)}match_cast error: PrimValue mismatch to "
                          f"specified constant: expected {operand}, got {value}")
    elif code == STORE_TO_HEAP:
        heap[_heap_slot(heap, operand, err_ctx)] = value
    elif code == ASSERT_EQUAL_TO_LOAD:
        expected = int(heap[_heap_slot(heap, operand, err_ctx)])
        if value != expected:
            raise VMError(f"{_context(err_ctx)}match_cast error: PrimValue mismatch to a "
                          f"previous populated value: expected {expected}, got {value}")
    elif code != NO_OP:
        raise VMError(f"unknown match_prim_value code {code}")


def make_prim_value(heap, code: int, operand: int) -> int:
    if code == USE_IMM:
        return operand
    return int(heap[_heap_slot(heap, operand, None)])


def check_tensor_info(arg, ndim: int, *rest) -> None:
    dtype, err_ctx = (None, rest[0] if rest else None) if len(rest) < 2 else (rest[0], rest[1])
    if not isinstance(arg, np.ndarray) and not is_device_array(arg):
        raise VMError(f"{_context(err_ctx)}expected a Tensor but got {type_key(arg)}")
    if ndim != -1 and arg.ndim != ndim:
        raise VMError(f"{_context(err_ctx)}expected Tensor with ndim {ndim} but got {arg.ndim} "
                      f"(shape {arg.shape})")
    if dtype is not None:
        expected = data_type(dtype)
        actual = DataType.from_numpy(arg.dtype)
        if expected != DataType(3, 0, 0) and actual != expected:
            raise VMError(f"{_context(err_ctx)}expected Tensor with dtype {expected} but got {actual}")


def check_shape_info(arg, ndim: int, err_ctx=None) -> None:
    if not isinstance(arg, ShapeTuple):
        raise VMError(f"{_context(err_ctx)}expected a Shape but got {type_key(arg)}")
    if ndim != -1 and len(arg) != ndim:
        raise VMError(f"{_context(err_ctx)}expected Shape with ndim {ndim} but got {len(arg)}")


def check_prim_value_info(arg, dtype, err_ctx=None) -> None:
    expected = data_type(dtype)
    kinds = {0: (int, np.integer), 1: (int, np.integer), 2: (float, int, np.floating, np.integer)}
    accepted = kinds.get(expected.code, (int, float, np.generic))
    if isinstance(arg, (np.ndarray, tuple, str)) or not isinstance(arg, accepted):
        raise VMError(f"{_context(err_ctx)}expected a PrimValue of dtype {expected} "
                      f"but got {type_key(arg)}")


def check_tuple_info(arg, size: int, err_ctx=None) -> None:
    if not isinstance(arg, tuple) or isinstance(arg, ShapeTuple):
        raise VMError(f"{_context(err_ctx)}expected a Tuple but got {type_key(arg)}")
    if len(arg) != size:
        raise VMError(f"{_context(err_ctx)}expected a Tuple with {size} elements but got a Tuple "
                      f"with {len(arg)} elements")


def check_string_info(arg, err_ctx=None) -> None:
    if not isinstance(arg, str):
        raise VMError(f"{_context(err_ctx)}expected a String but got {type_key(arg)}")


def check_func_info(arg, err_ctx=None) -> None:
    if not (isinstance(arg, Closure) or callable(arg)) or isinstance(arg, (np.ndarray, type)):
        raise VMError(f"{_context(err_ctx)}expected a Function but got {type_key(arg)}")


# ---- memory ----------------------------------------------------------------------------------

def alloc_storage(vm, shape, device_index: int, dtype_hint="uint8", mem_scope="global") -> Storage:
    dtype = data_type(dtype_hint)
    nbytes = math.prod(int(v) for v in shape) * max(1, (dtype.bits * dtype.lanes + 7) // 8)
    return vm.allocator(int(device_index)).alloc(nbytes)


def alloc_tensor(storage: Storage, offset: int, shape, dtype, mem_scope=None) -> np.ndarray:
    element = data_type(dtype).numpy
    shape = tuple(int(v) for v in shape)
    nbytes = math.prod(shape) * element.itemsize
    if offset < 0 or offset + nbytes > storage.nbytes:
        raise VMError(f"alloc_tensor: {nbytes} bytes at offset {offset} do not fit in a storage of "
                      f"{storage.nbytes} bytes")
    return storage.buffer[offset:offset + nbytes].view(element).reshape(shape)


def to_device(data, device_type: int, device_id: int):
    """A copy of `data` on device (type, id): numpy on the cpu (1), cupy on a cuda GPU (2)."""
    if device_type == 1:
        return data.get() if is_device_array(data) else np.array(data, copy=True)
    if device_type != 2:
        raise VMError(f"to_device: device type {device_type} is not supported by this runtime (cpu or cuda)")
    from ...runtime.cuda.support import cuda_problem

    problem = cuda_problem()
    if problem is not None:
        raise VMError(f"to_device: device cuda:{device_id} is not available: {problem}")
    import cupy

    with cupy.cuda.Device(int(device_id)):
        return cupy.array(data, copy=True)


# ---- values ----------------------------------------------------------------------------------

def null_value():
    return None


def copy(value):
    return value


def make_tuple(*fields) -> tuple:
    return tuple(fields)


def tuple_getitem(value, index: int):
    if not isinstance(value, tuple) or isinstance(value, ShapeTuple):
        raise VMError(f"tuple_getitem expects a Tuple, got {type_key(value)}")
    if not -len(value) <= index < len(value):
        raise VMError(f"tuple_getitem: index {index} is out of range for a Tuple of {len(value)} elements")
    return value[index]


def tuple_reset_item(value, index: int) -> None:
    """Drops a tuple's reference to an item early. Tuples are immutable here, and the item
    is released when the tuple's register is overwritten, so there is nothing to do."""
    tuple_getitem(value, index)


def shape_of(tensor) -> ShapeTuple:
    if not isinstance(tensor, np.ndarray) and not is_device_array(tensor):
        raise VMError(f"shape_of expects a Tensor, got {type_key(tensor)}")
    return ShapeTuple(tensor.shape)


def reshape(tensor: np.ndarray, new_shape) -> np.ndarray:
    new_shape = tuple(int(v) for v in new_shape)
    if math.prod(new_shape) != tensor.size:
        raise VMError(f"reshape: cannot view a tensor of shape {tensor.shape} as shape {new_shape}")
    return tensor.reshape(new_shape)


def tensor_to_shape(tensor: np.ndarray) -> ShapeTuple:
    if tensor.ndim != 1 or tensor.dtype.kind not in "iu":
        raise VMError(f"tensor_to_shape expects a 1-d integer tensor, got {tensor.dtype} of shape {tensor.shape}")
    return ShapeTuple(tensor.tolist())  # cupy's tolist copies to the host


def read_if_cond(cond) -> bool:
    if isinstance(cond, np.ndarray):
        if cond.dtype.kind not in "biu":
            raise VMError(f"read_if_cond expects an integer or bool condition, got {cond.dtype}")
        return bool(cond.reshape(-1)[0])
    return bool(int(cond))  # a GPU tensor's int() reads it back


# ---- closures --------------------------------------------------------------------------------

def make_closure(closure, *captured) -> Closure:
    if not isinstance(closure, Closure):
        if not callable(closure):
            raise VMError(f"make_closure expects a function, got {type_key(closure)}")
        closure = Closure(getattr(closure, "__name__", "packed"), impl=closure)
    return closure.bind_last_args(captured)


def invoke_closure(vm, closure, *args):
    return vm.invoke_closure(closure, *args)


def call_tir_dyn(kernel, *args):
    """Calls `kernel` with the tensors, then the integers of the trailing ShapeTuple unpacked."""
    *tensors, shape = args
    return kernel(*tensors, *shape)


BUILTINS = {
    f"vm.builtin.{func.__name__}": func
    for func in (
        alloc_shape_heap, match_shape, make_shape, match_prim_value, make_prim_value, check_tensor_info,
        check_shape_info, check_prim_value_info, check_string_info, check_tuple_info, check_func_info,
        alloc_storage, alloc_tensor, ensure_zero_offset, to_device, null_value, copy, make_tuple, tuple_getitem,
        tuple_reset_item, shape_of, reshape, tensor_to_shape, read_if_cond,
        make_closure, invoke_closure, call_tir_dyn,
    )
}
BUILTINS.update(BROADCAST_BUILTINS)
BUILTINS.update(PY_FUNC_BUILTINS)  # a VM binds its own (py_functions.py); this one: the registry alone

for _name, _func in BUILTINS.items():
    register_func(_name, _func, override=True)
