"""exec_mode="compiled", native tier: a static-shape function as one call into machine code.

Where a bytecode function is straight-line code over static shapes (what the compiler
emits for a model with fixed input sizes), everything but the inputs' data is known
when the VM loads: which kernels run in which order, every intermediate buffer, every
constant. `native_function(vm, function, fallback)` then works that out once, as a
plan, and returns a callable that per call

  1. checks each input exactly as the function's own checks would (ndarray, dtype,
     static shape), plus C-contiguity and alignment the kernels need,
  2. gets the result's storage (a StorageSite, so a result the caller still holds is
     never overwritten by the next call),
  3. calls the compiled host function (runtime/kernels/host_function.py), which runs every
     kernel on the planned buffers without returning to Python,

and returns the result. Anything it cannot take on (an input that fails a check,
another thread in the same VM at the same time, a kernel that reports an error) goes
to `fallback`, the function's Python code, which runs the same kernels and reports
errors with the VM's usual messages and frames.

The plan accepts only these instructions; any other makes the function ineligible
and it keeps its Python code:

    vm.builtin.null_value                       (also how a register is killed)
    vm.builtin.check_tensor_info(input, ...)    static ndim and dtype
    vm.builtin.match_shape(input, heap, ...)    every axis asserted to a constant
    vm.builtin.alloc_storage / alloc_tensor     constant sizes, offsets, dtypes
    vm.builtin.make_tuple(...)                  of allocated tensors (or such tuples)
    kernel(args...)                             a CPU kernel with static buffer parameters
    Ret %r                                      %r an allocated tensor, or a tuple of them

Intermediate buffers are allocated once per VM (the static memory plan made by the
compiler decides how they share storage); only the storages of returned tensors are
fetched per call.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

import numpy as np

from ...runtime.kernels.host_function import HEADER_WORDS, CallLayout, compile_host_function
from ...runtime.allocator import aligned_buffer
from ...runtime.device import CPU
from ...runtime.kernels import abi
from ...runtime.kernels.fast_call import DATA_OFFSET, DATA_OFFSET_OK
from ...runtime.kernels.library import KernelFunction
from .builtins import ASSERT_EQUAL_TO_IMM, _dtype
from .static_memory import VM_ARGUMENT, alloc_storage_site, alloc_tensor_site, static_values
from ..bytecode.isa import VOID_REGISTER, ArgKind, Opcode, decode_arg

_read_pointer = ctypes.c_void_p.from_address


class Ineligible(Exception):
    """The function cannot run natively (the message says why, for tests and -v)."""


# ---- abstract values of registers while planning ----------------------------------------

@dataclass(frozen=True)
class _Input:
    index: int


@dataclass(frozen=True)
class _Storage:
    index: int      # into Plan.storages


@dataclass(frozen=True)
class _Tensor:
    storage: int
    offset: int
    shape: tuple
    dtype: np.dtype
    site: object    # the TensorSite making its view

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass(frozen=True)
class _Tuple:
    items: tuple    # _Tensor or _Tuple

    def tensors(self):
        for item in self.items:
            yield from (item.tensors() if isinstance(item, _Tuple) else (item,))


@dataclass
class _KernelCall:
    kernel: KernelFunction
    args: list      # per parameter: _Input, _Tensor or a constant ndarray


class _Planner:
    """Walks the instructions once, tracking what each register holds."""

    def __init__(self, vm, function):
        self.vm = vm
        self.exe = vm.exe
        self.function = function
        self.info = vm.exe.func_table[function.index]
        self.registers: dict[int, object] = {i: _Input(i) for i in range(function.num_args)}
        self.input_dtype: dict[int, np.dtype] = {}
        self.input_shape: dict[int, tuple] = {}
        self.storages: list = []         # StorageSite per alloc_storage
        self.calls: list[_KernelCall] = []
        self.result: _Tensor | _Tuple | None = None

    def plan(self):
        instructions = self.exe.instructions(self.info)
        for pc, instr in enumerate(instructions):
            if instr.opcode == Opcode.RET:
                if pc != len(instructions) - 1:
                    raise Ineligible("code after a return")
                result = self.registers.get(instr.field("result"))
                if not isinstance(result, (_Tensor, _Tuple)):
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
            pass
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
        if not isinstance(value, _Input):
            raise Ineligible("a check of something other than an input")
        return value.index

    def check_tensor_info(self, instr) -> None:
        index = self._input(instr.args[0])
        values = static_values(self.exe, instr, self.vm.constants, register_positions=(0,))
        if values is None or len(values) < 3:
            raise Ineligible("check_tensor_info without a static dtype")
        dtype = _dtype(values[2])
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

    def alloc_storage(self, instr) -> _Storage:
        values = static_values(self.exe, instr, self.vm.constants)
        site = alloc_storage_site(self.vm, values) if values is not None else None
        devices = self.vm.devices
        if site is None or not -1 <= site.device_index < len(devices) or devices[site.device_index].device_type != CPU:
            raise Ineligible("an allocation of dynamic size or off the CPU")
        self.storages.append(site)
        return _Storage(len(self.storages) - 1)

    def alloc_tensor(self, instr) -> _Tensor:
        storage = self.registers.get(decode_arg(instr.args[0])[1]) if decode_arg(instr.args[0])[0] == ArgKind.REGISTER else None
        values = static_values(self.exe, instr, self.vm.constants)  # register at position 0
        site = alloc_tensor_site(values) if values is not None and isinstance(storage, _Storage) else None
        if site is None:
            raise Ineligible("a tensor of dynamic shape")
        tensor = _Tensor(storage.index, site.offset, site.shape, np.dtype(_dtype(site.dtype).numpy), site)
        if site.offset < 0 or site.offset % tensor.dtype.itemsize or site.offset + tensor.nbytes > self.storages[storage.index].nbytes:
            raise Ineligible("a tensor outside its storage")
        return tensor

    def make_tuple(self, instr) -> _Tuple:
        items = []
        for word in instr.args:
            kind, register = decode_arg(word)
            item = self.registers.get(register) if kind == ArgKind.REGISTER else None
            if not isinstance(item, (_Tensor, _Tuple)):
                raise Ineligible("a tuple of something other than allocated tensors")
            items.append(item)
        return _Tuple(tuple(items))

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
        self.calls.append(_KernelCall(kernel, args))

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
        if isinstance(held, _Input):
            if self.input_dtype.get(held.index) != dtype or self.input_shape.get(held.index) != shape:
                raise Ineligible(f"input for '{param.name}' is not checked to fit it")
            return held
        if isinstance(held, _Tensor) and held.dtype == dtype and held.shape == shape:
            return held
        raise Ineligible(f"argument for '{param.name}' is not a static tensor of its shape")

    @staticmethod
    def check_writes(name, info, args) -> None:
        """Kernels write only tensors the function allocated, never one overlapping another argument."""
        for (param, arg) in zip(info.params, args):
            if param.name not in info.writes:
                continue
            if not isinstance(arg, _Tensor):
                raise Ineligible(f"kernel '{name}' writes an input or a constant")
            for other_param, other in zip(info.params, args):
                if (other_param is not param and isinstance(other, _Tensor) and other.storage == arg.storage
                        and other.offset < arg.offset + arg.nbytes and arg.offset < other.offset + other.nbytes):
                    raise Ineligible(f"kernel '{name}' writes a buffer overlapping another argument")


def _address(array: np.ndarray) -> int:
    return _read_pointer(id(array) + DATA_OFFSET).value or 0


class NativeFunction:
    """The callable the VM uses for a planned function (see the module docstring)."""

    def __init__(self, vm, planner: _Planner, fallback):
        self.fallback = fallback
        self.name = planner.function.name
        self._lock = threading.Lock()
        count = planner.function.num_args
        self._num_args = count
        self._checks = [(planner.input_dtype[i], planner.input_shape[i]) for i in range(count)]
        result = planner.result
        results = list(result.tensors()) if isinstance(result, _Tuple) else [result]
        fetched = sorted({tensor.storage for tensor in results})   # storages fetched per call
        self._result_storages = [planner.storages[index] for index in fetched]
        self._result = self._builder(result, fetched)
        # Buffers of every other storage: allocated now, for every call.
        self._buffers = {index: aligned_buffer(site.nbytes) for index, site in enumerate(planner.storages)
                         if index not in fetched}
        # Slots: the inputs, then the per-call tensors (views of returned storages).
        per_call: dict[tuple[int, int], int] = {}   # (storage, offset) -> slot
        layouts, frame_words, static_words = [], 1, []   # word 0: a zero, the scalars of every call
        contexts: dict[int, abi.KernelContext] = {}
        workspace_bytes = max([call.kernel.info.workspace_bytes for call in planner.calls] + [0])
        self._workspace = aligned_buffer(workspace_bytes, abi.WORKSPACE_ALIGNMENT) if workspace_bytes else None
        for call in planner.calls:
            header, args = frame_words, frame_words + HEADER_WORDS
            frame_words = args + len(call.args)
            threads = self._threads(call.kernel)
            if threads not in contexts:
                contexts[threads] = self._context(threads)
            static_words.append((header, ctypes.cast(call.kernel._cfunc, ctypes.c_void_p).value))
            static_words.append((header + 1, ctypes.addressof(contexts[threads])))
            copies = []
            for position, arg in enumerate(call.args):
                if isinstance(arg, _Input):
                    copies.append((position, arg.index))
                elif isinstance(arg, _Tensor) and arg.storage in fetched:
                    slot = per_call.setdefault((fetched.index(arg.storage), arg.offset), count + len(per_call))
                    copies.append((position, slot))
                elif isinstance(arg, _Tensor):
                    static_words.append((args + position, _address(self._buffers[arg.storage]) + arg.offset))
                else:
                    static_words.append((args + position, _address(arg)))
            layouts.append(CallLayout(header, args, tuple(copies)))
        self._contexts = contexts
        self._constants = [arg for call in planner.calls for arg in call.args if isinstance(arg, np.ndarray)]
        self._frame = np.zeros(frame_words, dtype=np.int64)
        frame_address = _address(self._frame)
        for call in layouts:
            self._frame[call.header + 2] = frame_address   # scalars: the zero word
        for index, word in static_words:
            self._frame[index] = word
        self._frame_address = frame_address
        self._per_call = sorted(per_call.items(), key=lambda item: item[1])
        self._slots = (ctypes.c_void_p * max(1, count + len(per_call)))()
        self._slots_address = ctypes.addressof(self._slots)
        self.kernel_calls = len(layouts)
        self._host = compile_host_function(tuple(layouts))

    @staticmethod
    def _builder(result, fetched: list[int]):
        """A function from the per-call storages (in `fetched` order) to the result value."""
        if isinstance(result, _Tensor):
            position, site = fetched.index(result.storage), result.site
            return lambda storages: site(storages[position])
        builders = [NativeFunction._builder(item, fetched) for item in result.items]
        return lambda storages: tuple(build(storages) for build in builders)

    @staticmethod
    def _threads(kernel: KernelFunction) -> int:
        library = kernel.library
        if not kernel.info.parallel:
            return 1
        total = sum(int(np.prod(param.shape, dtype=np.int64)) * dtype.itemsize
                    for _, param, dtype, _ in kernel._buffers)
        if total < library.parallel_threshold_bytes:
            return 1
        return max(1, min(library.num_threads, abi.MAX_THREADS))

    def _context(self, threads: int) -> abi.KernelContext:
        context = abi.KernelContext()
        context.abi_version = abi.KERNEL_ABI_VERSION
        context.num_threads = threads
        if self._workspace is not None:
            context.workspace = _address(self._workspace)
            context.workspace_size = self._workspace.nbytes
        return context

    def __call__(self, *args):
        if len(args) != self._num_args or not self._lock.acquire(False):
            return self.fallback(*args)
        try:
            slots = self._slots
            for index, (arg, (dtype, shape)) in enumerate(zip(args, self._checks)):
                if (arg.__class__ is not np.ndarray or arg.dtype is not dtype or arg.shape != shape
                        or not arg.flags.c_contiguous):
                    return self.fallback(*args)
                address = _read_pointer(id(arg) + DATA_OFFSET).value
                if address is None or address % dtype.itemsize:
                    return self.fallback(*args)
                slots[index] = address
            storages = [site() for site in self._result_storages]
            result = self._result(storages)
            for (position, offset), slot in self._per_call:
                slots[slot] = _read_pointer(id(storages[position].buffer) + DATA_OFFSET).value + offset
            code = self._host.call(self._slots_address, self._frame_address)
        finally:
            self._lock.release()
        if code:
            return self.fallback(*args)
        return result


def native_function(vm, function, fallback):
    """The native callable for bytecode function `function`, or None when it is not eligible."""
    if not DATA_OFFSET_OK or vm.memory != "pooled" or vm.devices[0].device_type != CPU:
        return None
    try:
        planner = _Planner(vm, function).plan()
    except Ineligible:
        return None
    if not planner.calls:
        return None
    return NativeFunction(vm, planner, fallback)


def why_not_native(vm, function) -> str | None:
    """Why `function` keeps its Python code in compiled mode (None: it runs natively)."""
    try:
        _Planner(vm, function).plan()
    except Ineligible as reason:
        return str(reason)
    return None
