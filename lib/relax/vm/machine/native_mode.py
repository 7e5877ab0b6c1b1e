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

import numpy as np

from ...runtime.kernels.host_function import HEADER_WORDS, CallLayout, compile_host_function
from ...runtime.allocator import aligned_buffer
from ...runtime.device import CPU
from ...runtime.kernels import abi
from ...runtime.kernels.fast_call import DATA_OFFSET, DATA_OFFSET_OK, static_threads
from .native_plan import Ineligible, PlannedInput, PlannedTensor, PlannedTuple, Planner

_read_pointer = ctypes.c_void_p.from_address


def _address(array: np.ndarray) -> int:
    return _read_pointer(id(array) + DATA_OFFSET).value or 0


class NativeFunction:
    """The callable the VM uses for a planned function (see the module docstring)."""

    def __init__(self, vm, planner: Planner, fallback):
        self.fallback = fallback
        self.name = planner.function.name
        self._lock = threading.Lock()
        count = planner.function.num_args
        self._num_args = count
        self._checks = [(planner.input_dtype[i], planner.input_shape[i]) for i in range(count)]
        result = planner.result
        results = list(result.tensors()) if isinstance(result, PlannedTuple) else [result]
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
            threads = static_threads(call.kernel)
            if threads not in contexts:
                contexts[threads] = self._context(threads)
            static_words.append((header, ctypes.cast(call.kernel._cfunc, ctypes.c_void_p).value))
            static_words.append((header + 1, ctypes.addressof(contexts[threads])))
            copies = []
            for position, arg in enumerate(call.args):
                if isinstance(arg, PlannedInput):
                    copies.append((position, arg.index))
                elif isinstance(arg, PlannedTensor) and arg.storage in fetched:
                    slot = per_call.setdefault((fetched.index(arg.storage), arg.offset), count + len(per_call))
                    copies.append((position, slot))
                elif isinstance(arg, PlannedTensor):
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
        if isinstance(result, PlannedTensor):
            position, site = fetched.index(result.storage), result.site
            return lambda storages: site(storages[position])
        builders = [NativeFunction._builder(item, fetched) for item in result.items]
        return lambda storages: tuple(build(storages) for build in builders)

    def _context(self, threads: int) -> abi.KernelContext:
        context = abi.KernelContext()
        context.abi_version = abi.KERNEL_ABI_VERSION
        context.num_threads = threads
        if self._workspace is not None:
            context.workspace = _address(self._workspace)
            context.workspace_size = self._workspace.nbytes
        return context

    def __call__(self, *args):
        return self.run(args, self.fallback)

    def run(self, args: tuple, fallback):
        """The call on `args`; fallback(*args) where they are not what the plan takes, and to
        report a kernel's error: the compiled function, or the VM's whole call path for
        arguments as a caller passed them (function_api.py), which binds them and comes back
        here (the lock is free by then)."""
        if len(args) != self._num_args or not self._lock.acquire(False):
            return fallback(*args)
        try:
            code, result = self._call_locked(args)
        finally:
            self._lock.release()
        return fallback(*args) if code else result

    def _call_locked(self, args: tuple) -> tuple:
        """(the host function's code, the result); code -1 where `args` are not what the plan takes."""
        slots = self._slots
        for index, (arg, (dtype, shape)) in enumerate(zip(args, self._checks)):
            if (arg.__class__ is not np.ndarray or arg.dtype is not dtype or arg.shape != shape
                    or not arg.flags.c_contiguous):
                return -1, None
            address = _read_pointer(id(arg) + DATA_OFFSET).value
            if address is None or address % dtype.itemsize:
                return -1, None
            slots[index] = address
        storages = [site() for site in self._result_storages]
        result = self._result(storages)
        for (position, offset), slot in self._per_call:
            slots[slot] = _read_pointer(id(storages[position].buffer) + DATA_OFFSET).value + offset
        return self._host.call(self._slots_address, self._frame_address), result


def native_function(vm, function, fallback):
    """The native callable for bytecode function `function`, or None when it is not eligible."""
    if not DATA_OFFSET_OK or vm.memory != "pooled" or vm.devices[0].device_type != CPU:
        return None
    try:
        planner = Planner(vm, function).plan()
    except Ineligible:
        return None
    if not planner.calls:
        return None
    return NativeFunction(vm, planner, fallback)


def why_not_native(vm, function) -> str | None:
    """Why `function` keeps its Python code in compiled mode (None: it runs natively)."""
    try:
        Planner(vm, function).plan()
    except Ineligible as reason:
        return str(reason)
    return None
