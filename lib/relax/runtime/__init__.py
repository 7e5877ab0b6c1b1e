"""The runtime: what a compiled artifact needs to run, and nothing of the compiler.

It sits at the end of the flow, under the VM (relax.vm): runtime values (numpy
tensors, ShapeTuple, Closure, Storage), data types, devices, memory allocators and
the PackedFunc registry through which bytecode reaches builtins, kernels and
Python callbacks. It never imports the compiler (ir, script, transform, op).
"""

from .allocator import NaiveAllocator, PooledAllocator, make_allocator
from .device import Device, cpu
from .dtype import DataType, dtype_name
from .errors import Frame, VMError
from .objects import Closure, ShapeTuple, Storage, type_key
from .registry import get_global_func, list_global_funcs, register_func, remove_global_func

__all__ = [
    "Closure", "DataType", "Device", "Frame", "NaiveAllocator", "PooledAllocator", "ShapeTuple", "Storage",
    "VMError", "cpu", "dtype_name", "get_global_func", "list_global_funcs", "make_allocator",
    "register_func", "remove_global_func", "type_key",
]
