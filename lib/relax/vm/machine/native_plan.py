"""The plan of a static-shape function for the native tier (native_mode.py): which
kernels run in which order on which buffers, worked out once when the VM loads.

`Planner(vm, function).plan()` walks the function's instructions (the ones
native_mode.py's docstring lists) and records the inputs' dtypes and shapes, every
storage and tensor allocated, each kernel call with its argument buffers, and the
returned value; any other instruction raises Ineligible with the reason.
"""

from __future__ import annotations

import numpy as np

from ...records import record
from ...runtime.device import CPU
from ...runtime.kernels.library import KernelFunction
from .builtins import ASSERT_EQUAL_TO_IMM, data_type
from .static_memory import alloc_storage_site, alloc_tensor_site, static_values
from ..bytecode.isa import VOID_REGISTER, ArgKind, Opcode, decode_arg


class Ineligible(Exception):
    """The function cannot run natively (the message says why, for tests and -v)."""


# ---- abstract values of registers while planning ----------------------------------------

@record
class PlannedInput:
    index: int


@record
class PlannedStorage:
    index: int      # into Plan.storages


@record
class PlannedTensor:
    storage: int
    offset: int
    shape: tuple
    dtype: np.dtype
    site: object    # the TensorSite making its view

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@record
class PlannedTuple:
    items: tuple    # PlannedTensor or PlannedTuple

    def tensors(self):
        for item in self.items:
            yield from (item.tensors() if isinstance(item, PlannedTuple) else (item,))


@record(mutable=True)
class PlannedKernelCall:
    kernel: KernelFunction
    args: list      # per parameter: PlannedInput, PlannedTensor or a constant ndarray


class Planner:
    """Walks the instructions once, tracking what each register holds."""

    def __init__(self, vm, function):
        self.vm = vm
        self.exe = vm.exe
        self.function = function
        self.info = vm.exe.func_table[function.index]
        self.registers: dict[int, object] = {i: PlannedInput(i) for i in range(function.num_args)}
        self.input_dtype: dict[int, np.dtype] = {}
        self.input_shape: dict[int, tuple] = {}
        self.storages: list = []         # StorageSite per alloc_storage
        self.calls: list[PlannedKernelCall] = []
        self.result: PlannedTensor | PlannedTuple | None = None

    def plan(self):
        instructions = self.exe.instructions(self.info)
        for pc, instr in enumerate(instructions):
            if instr.opcode == Opcode.RET:
                if pc != len(instructions) - 1:
                    raise Ineligible("code after a return")
                result = self.registers.get(instr.field("result"))
                if not isinstance(result, (PlannedTensor, PlannedTuple)):
                    raise Ineligible("the result is not a tensor the function allocates")
                self.result = result
            elif instr.opcode != Opcode.CALL:
                raise Ineligible("control flow")
            else:
                self.call(instr)
        if self.result is None:
            raise Ineligible("no return")
        for index in range(self.function.num_args):
            if index not in self.input_dtype or index not in self.input_shape:
                raise Ineligible(f"input {index} has no static dtype and shape check")
        return self

    def call(self, instr) -> None:
        name = self.exe.func_table[instr.field("func_index")].name
        dst = instr.field("dst")
        value = None
        if name == "vm.builtin.null_value":
            pass  # a killed register (null_value): nothing to plan
        elif name == "vm.builtin.check_tensor_info":
            self.check_tensor_info(instr)
        elif name == "vm.builtin.match_shape":
            self.match_shape(instr)
        elif name == "vm.builtin.alloc_storage":
            value = self.alloc_storage(instr)
        elif name == "vm.builtin.alloc_tensor":
            value = self.alloc_tensor(instr)
        elif name == "vm.builtin.make_tuple":
            value = self.make_tuple(instr)
        else:
            self.kernel_call(name, instr)
        if dst != VOID_REGISTER:
            self.registers[dst] = value

    def _input(self, word) -> int:
        kind, register = decode_arg(word)
        value = self.registers.get(register) if kind == ArgKind.REGISTER else None
        if not isinstance(value, PlannedInput):
            raise Ineligible("a check of something other than an input")
        return value.index

    def check_tensor_info(self, instr) -> None:
        index = self._input(instr.args[0])
        values = static_values(self.exe, instr, self.vm.constants, register_positions=(0,))
        if values is None or len(values) < 3:
            raise Ineligible("check_tensor_info without a static dtype")
        dtype = data_type(values[2])
        if dtype.bits == 0 or dtype.lanes != 1:
            raise Ineligible("an input of any dtype")
        self.input_dtype[index] = np.dtype(dtype.numpy)

    def match_shape(self, instr) -> None:
        index = self._input(instr.args[0])
        values = static_values(self.exe, instr, self.vm.constants, register_positions=(0, 1))
        if values is None:
            raise Ineligible("match_shape with register operands")
        size = values[2]
        codes = values[3:3 + 2 * size]
        if len(codes) != 2 * size or any(code != ASSERT_EQUAL_TO_IMM for code in codes[0::2]):
            raise Ineligible("a symbolic input shape")
        self.input_shape[index] = tuple(int(v) for v in codes[1::2])

    def alloc_storage(self, instr) -> PlannedStorage:
        values = static_values(self.exe, instr, self.vm.constants)
        site = alloc_storage_site(self.vm, values) if values is not None else None
        devices = self.vm.devices
        if site is None or not -1 <= site.device_index < len(devices) or devices[site.device_index].device_type != CPU:
            raise Ineligible("an allocation of dynamic size or off the CPU")
        self.storages.append(site)
        return PlannedStorage(len(self.storages) - 1)

    def alloc_tensor(self, instr) -> PlannedTensor:
        storage = self.registers.get(decode_arg(instr.args[0])[1]) if decode_arg(instr.args[0])[0] == ArgKind.REGISTER else None
        values = static_values(self.exe, instr, self.vm.constants)  # register at position 0
        site = alloc_tensor_site(values) if values is not None and isinstance(storage, PlannedStorage) else None
        if site is None:
            raise Ineligible("a tensor of dynamic shape")
        tensor = PlannedTensor(storage.index, site.offset, site.shape, np.dtype(data_type(site.dtype).numpy), site)
        if site.offset < 0 or site.offset % tensor.dtype.itemsize or site.offset + tensor.nbytes > self.storages[storage.index].nbytes:
            raise Ineligible("a tensor outside its storage")
        return tensor

    def make_tuple(self, instr) -> PlannedTuple:
        items = []
        for word in instr.args:
            kind, register = decode_arg(word)
            item = self.registers.get(register) if kind == ArgKind.REGISTER else None
            if not isinstance(item, (PlannedTensor, PlannedTuple)):
                raise Ineligible("a tuple of something other than allocated tensors")
            items.append(item)
        return PlannedTuple(tuple(items))

    def kernel_call(self, name: str, instr) -> None:
        kernel = self.vm._resolve(name)
        if not isinstance(kernel, KernelFunction):
            raise Ineligible(f"'{name}' is not a CPU kernel")
        info = kernel.info
        if info.ret_dtype or info.symbolic_vars or not isinstance(info.workspace_bytes, int):
            raise Ineligible(f"kernel '{name}' has a result, symbolic sizes or a dynamic workspace")
        if len(instr.args) != len(info.params):
            raise Ineligible(f"kernel '{name}' called with {len(instr.args)} arguments")
        args = []
        for word, (_, param, dtype, ndim) in zip(instr.args, kernel._buffers if len(kernel._buffers) == len(info.params) else []):
            args.append(self.argument(word, param, dtype, ndim))
        if len(args) != len(info.params):
            raise Ineligible(f"kernel '{name}' has scalar parameters")
        self.check_writes(name, info, args)
        self.calls.append(PlannedKernelCall(kernel, args))

    def argument(self, word, param, dtype, ndim):
        if dtype is None or any(d.__class__ is not int for d in param.shape):
            raise Ineligible(f"parameter '{param.name}' has no static shape")
        shape = tuple(param.shape)
        kind, value = decode_arg(word)
        if kind == ArgKind.CONST_INDEX:
            constant = self.vm.constants[value]
            if (not isinstance(constant, np.ndarray) or constant.dtype != dtype or constant.shape != shape
                    or not constant.flags.c_contiguous or constant.ctypes.data % dtype.itemsize):
                raise Ineligible(f"constant for '{param.name}' does not fit it")
            return constant
        held = self.registers.get(value) if kind == ArgKind.REGISTER else None
        if isinstance(held, PlannedInput):
            if self.input_dtype.get(held.index) != dtype or self.input_shape.get(held.index) != shape:
                raise Ineligible(f"input for '{param.name}' is not checked to fit it")
            return held
        if isinstance(held, PlannedTensor) and held.dtype == dtype and held.shape == shape:
            return held
        raise Ineligible(f"argument for '{param.name}' is not a static tensor of its shape")

    @staticmethod
    def check_writes(name, info, args) -> None:
        """Kernels write only tensors the function allocated, never one overlapping another argument."""
        for (param, arg) in zip(info.params, args):
            if param.name not in info.writes:
                continue
            if not isinstance(arg, PlannedTensor):
                raise Ineligible(f"kernel '{name}' writes an input or a constant")
            for other_param, other in zip(info.params, args):
                if (other_param is not param and isinstance(other, PlannedTensor) and other.storage == arg.storage
                        and other.offset < arg.offset + arg.nbytes and arg.offset < other.offset + other.nbytes):
                    raise Ineligible(f"kernel '{name}' writes a buffer overlapping another argument")
