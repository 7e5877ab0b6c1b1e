"""Static-shape memory: each allocation site keeps its storage from one call to the next.

With static shapes, `vm.builtin.alloc_storage` at a given instruction asks for the same
bytes on every call. A StorageSite (one per such instruction and VirtualMachine, with
the pooled allocator) allocates once and hands the same Storage out again on the next
call; a TensorSite (`vm.builtin.alloc_tensor` with a constant offset, shape and dtype)
keeps the tensor view it made of that storage, so a call makes no new numpy objects.

Reuse is decided by reference counts, as the pooled allocator does: a storage is handed
out again only when nothing but the sites refers to it or to any view of its memory.
A returned tensor the caller still holds, a tensor a packed function kept, or a frame
of the same function still running (recursion) all hold a reference, and the site then
allocates fresh storage and forgets the old one, which lives on with its holders: a
result is never overwritten by a later call.
"""

from __future__ import annotations

import math
from sys import getrefcount

from ...runtime.objects import Storage
from .builtins import data_type, alloc_tensor

VM_ARGUMENT = object()  # stands for %vm among the static argument values


class SiteStorage(Storage):
    """A Storage with the tensor views its sites made of it, by (offset, shape, dtype), and
    the same views as a list (iterating a list is the cheapest reference check)."""

    __slots__ = ("views", "view_list")

    def __init__(self, buffer, device):
        super().__init__(buffer, device)
        self.views: dict = {}
        self.view_list: list = []

    def add_view(self, key, view) -> None:
        self.views[key] = view
        self.view_list.append(view)


def _probe_view_references() -> int:
    """What getrefcount gives, in StorageSite.__call__'s loop, for a view held only by the
    storage's dict and list."""
    storage = SiteStorage(None, None)
    storage.add_view(0, object())
    for view in storage.view_list:
        return getrefcount(view)
    return 0


VIEW_REFERENCES = _probe_view_references()


class StorageSite:
    """`vm.builtin.alloc_storage(vm, shape, device, dtype, scope)` with constant arguments."""

    __slots__ = ("vm", "device_index", "nbytes", "storage", "raw", "raw_references", "__weakref__")

    def __init__(self, vm, shape, device_index: int, dtype_hint="uint8"):
        dtype = data_type(dtype_hint)
        self.vm = vm
        self.device_index = int(device_index)
        self.nbytes = math.prod(int(v) for v in shape) * max(1, (dtype.bits * dtype.lanes + 7) // 8)
        self.storage = None
        self.raw = None
        self.raw_references = 0

    def __call__(self) -> Storage:
        storage = self.storage
        if storage is not None and getrefcount(storage) == 3:
            views = storage.view_list
            if getrefcount(self.raw) == self.raw_references + len(views):
                for view in views:
                    if getrefcount(view) != VIEW_REFERENCES:
                        break
                else:
                    return storage
        return self._fresh()

    def _fresh(self) -> Storage:
        allocated = self.vm.allocator(self.device_index).alloc(self.nbytes)
        storage = SiteStorage(allocated.buffer, allocated.device)
        del allocated
        raw = storage.buffer.base if storage.buffer.base is not None else storage.buffer
        self.storage, self.raw = storage, raw
        del raw
        self.raw_references = getrefcount(self.raw)
        return storage


class TensorSite:
    """`vm.builtin.alloc_tensor(storage, offset, shape, dtype)` with a constant offset, shape and dtype."""

    __slots__ = ("offset", "shape", "dtype", "key")

    def __init__(self, offset: int, shape, dtype):
        self.offset = int(offset)
        self.shape = tuple(int(v) for v in shape)
        self.dtype = dtype
        self.key = (self.offset, self.shape, str(data_type(dtype)))

    def __call__(self, storage):
        if storage.__class__ is SiteStorage:
            view = storage.views.get(self.key)
            if view is None:
                view = alloc_tensor(storage, self.offset, self.shape, self.dtype)
                storage.add_view(self.key, view)
            return view
        return alloc_tensor(storage, self.offset, self.shape, self.dtype)


def alloc_storage_site(vm, values: list):
    """A StorageSite for the static argument values of an alloc_storage call, or None."""
    if len(values) < 3 or values[0] is not VM_ARGUMENT or any(v is VM_ARGUMENT for v in values[1:]):
        return None
    shape, device_index = values[1], values[2]
    if not isinstance(shape, tuple) or not all(isinstance(v, int) for v in shape) or not isinstance(device_index, int):
        return None
    try:
        return StorageSite(vm, shape, device_index, values[3] if len(values) > 3 else "uint8")
    except Exception:  # noqa: BLE001 - an odd dtype: the builtin reports it at run time
        return None


def alloc_tensor_site(values: list):
    """A TensorSite for alloc_tensor(<register>, offset, shape, dtype), or None."""
    if len(values) != 4 or any(v is VM_ARGUMENT for v in values[1:]):
        return None
    offset, shape, dtype = values[1:]
    if not isinstance(offset, int) or not isinstance(shape, tuple) or not all(isinstance(v, int) for v in shape):
        return None
    try:
        return TensorSite(offset, shape, dtype)
    except Exception:  # noqa: BLE001 - an odd dtype: the builtin reports it at run time
        return None


def static_values(exe, instr, constants: list, register_positions=(0,)):
    """The argument values of a call when no argument is a register except at `register_positions`
    (None in their place) and %vm (VM_ARGUMENT)."""
    from ..bytecode.isa import VM_REGISTER, ArgKind, decode_arg

    values = []
    for position, word in enumerate(instr.args):
        kind, value = decode_arg(word)
        if kind == ArgKind.REGISTER:
            if value == VM_REGISTER:
                values.append(VM_ARGUMENT)
            elif position in register_positions:
                values.append(None)
            else:
                return None
        elif kind == ArgKind.IMMEDIATE:
            values.append(value)
        elif kind == ArgKind.CONST_INDEX:
            values.append(constants[value])
        else:
            return None
    return values


def install_sites(vm, exe, bytecode: list, constants: list) -> None:
    """Replaces static alloc_storage / alloc_tensor calls in decoded code by per-VM sites."""
    from .decoder import CALL, CALL0, CALL1
    from ..bytecode.isa import Opcode, decode_arg

    for function in bytecode:
        if function is None:
            continue
        info = exe.func_table[function.index]
        for position, instr in enumerate(exe.instructions(info)):
            decoded = function.code[position]
            if instr.opcode != Opcode.CALL or decoded[0] != CALL:
                continue
            name = exe.func_table[instr.field("func_index")].name
            if name not in ("vm.builtin.alloc_storage", "vm.builtin.alloc_tensor"):
                continue
            values = static_values(exe, instr, constants)
            if values is None:
                continue
            if name == "vm.builtin.alloc_storage":
                site = alloc_storage_site(vm, values)
                if site is not None:
                    # The bound method, not the site: calling it skips the instance-call slot lookup.
                    function.code[position] = (CALL0, site.__call__, None, decoded[3])
            elif values[0] is None:
                site = alloc_tensor_site(values)
                if site is not None:
                    function.code[position] = (CALL1, site.__call__, decode_arg(instr.args[0])[1], decoded[3])
