"""VirtualMachine: loads an Executable on devices and runs its bytecode.

At construction it picks devices (a CPU is always last, for shape work), makes the
function pool (packed functions resolved from the executable's imports, then the
global registry; bytecode functions as Closures), loads the constants once, and
decodes every bytecode function (decoder.py). The dispatch loop keeps its own frame
stack, so bytecode calling bytecode never recurses in Python: deep recursion in a
program is bounded by MAX_FRAMES, not by Python's recursion limit. Compiled mode
recurses in Python and stops at Python's limit; both report a call stack overflow
(`call_stack_overflow`).
"""

from __future__ import annotations

import enum
import sys
from sys import getrefcount
from typing import Any, Callable

from ...diagnostics import UserError
from ...runtime.allocator import make_allocator
from ...runtime.device import CPU, CUDA, Device, cpu
from ...runtime.errors import Frame, VMError
from ...runtime.objects import Closure
from ...runtime.registry import get_global_func
from . import builtins  # noqa: F401 - registers vm.builtin.* before any lookup
from .function_api import FunctionAPI
from .decoder import (
    ALLOC_CALL, ALLOC_CALL2, ALLOC_CALL3, CALL, CALL0, CALL1, CALL_CLOSURE, CALL_VM, CALL_VM1, GOTO, IF, RET,
    decode_function, empty_function,
)
from ..bytecode.executable import EXEC_MODES, Executable
from .entry_checks import install_checks
from .static_memory import install_sites
from .static_calls import fuse_static_calls
from .compiled_mode import compile_functions
from .default_mode import default_exec_mode
from .native_mode import native_function
from .py_functions import CALL_PY_FUNC, PyFunctionBindings, run_plugin
from ..bytecode.isa import FuncKind

MAX_FRAMES = 10_000  # a runaway recursion stops in well under a second


def call_stack_overflow(limit: int, what: str = "") -> str:
    """The message of both exec modes when calls nest deeper than their limit."""
    return f"call stack overflow: more than {limit} nested calls{what}"


class VMInstrumentReturnKind(enum.IntEnum):
    NO_OP = 0
    SKIP_RUN = 1


def _unresolved(name: str) -> Callable:
    def missing(*args):
        found = get_global_func(name, allow_missing=True)
        if found is None:
            raise VMError(f"packed function '{name}' is not found in the executable's imports "
                          "or the global registry")
        return found(*args)

    missing.unresolved_name = name
    return missing


class VirtualMachine(FunctionAPI):
    def __new__(cls, exe=None, *args, **kwargs):
        # A module loaded on an RPC server (relax.rpc) runs there: relax.VirtualMachine(remote_exe,
        # session.cpu()) gives its proxy, as TVM's RPC modules do.
        if getattr(exe, "remote_session", None) is not None:
            from ...rpc.remote_vm import RemoteVirtualMachine

            return RemoteVirtualMachine(exe, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, exe: Executable | str, device="cpu", memory: str = "pooled", exec_mode: str | None = None,
                 native: bool = True, allow_python: bool | None = None, plugins=(), py_functions: dict | None = None):
        if isinstance(exe, str):
            from ..bytecode.loader import load

            exe = load(exe)
        self.exe = exe
        for plugin in plugins:
            run_plugin(plugin)
        # R.call_py_func's bindings, checked before anything runs (py_functions.py)
        allow = exe.allow_python if allow_python is None else allow_python
        self.py_functions = PyFunctionBindings(self, exe, allow, py_functions)
        devices = [Device.parse(d) for d in (device if isinstance(device, (list, tuple)) else [device])]
        if not devices or devices[-1].device_type != CPU:
            devices.append(cpu())
        self.devices = devices
        self.memory = memory
        self._allocators: list = [None] * len(devices)
        make_allocator(memory, devices[-1])  # refuses an unknown kind now, not at the first allocation
        self._device_libraries: list = []  # kernel libraries on devices[0] when it is a GPU
        if devices[0].device_type == CUDA:
            from .cuda_device import attach

            attach(self)  # cupy, the cuda kernels, device copies of inputs and results
        elif exe.device_kernel_objects:
            from .cuda_device import refuse_cpu

            refuse_cpu(exe)
        self.constants = self._load_constants()
        self.unresolved_functions: list[str] = []
        self.func_pool = self._init_func_pool()
        self._instrument: Callable | None = None
        self._bytecode = self._decode(hooked=False)
        if exec_mode is None:  # what the artifact asks for (relaxc/relaxld --exec-mode), else default_mode.py's choice
            link_info = exe.link_info
            asked = link_info.flags.get("exec_mode") if link_info is not None else None
            exec_mode = asked or default_exec_mode(self._bytecode)
        if exec_mode not in EXEC_MODES:
            raise UserError(f"unknown exec_mode '{exec_mode}' (expected one of: {', '.join(EXEC_MODES)})")
        self.exec_mode = exec_mode
        self._fuse_static_calls()
        # exec_mode="compiled": every bytecode function as a Python function (compiled_mode.py), and
        # a static straight-line one as one native call running its kernels (native_mode.py).
        self._compiled = compile_functions(self, self._bytecode) if exec_mode == "compiled" else None
        self.native_functions: list[str] = []
        if self._compiled is not None and native:
            self._compile_native()
        self._inputs: dict[str, tuple] = {}
        self._outputs: dict[str, Any] = {}
        self._saved: dict[str, Callable] = {}

    # ---- set-up ------------------------------------------------------------------------

    def _compile_native(self) -> None:
        for function in self._bytecode:
            if function is None:
                continue
            found = native_function(self, function, self._compiled[function.index])
            if found is not None:
                self._compiled[function.index] = found
                self.native_functions.append(function.name)

    def _load_constants(self) -> list:
        if self.devices[0].device_type == CUDA:
            from .cuda_device import upload_constants

            return upload_constants(self, self.exe.constants)  # once per VM
        if self.devices[0].device_type != CPU:
            raise UserError(f"device {self.devices[0]} is not supported by this runtime (cpu or cuda)")
        return list(self.exe.constants)  # tensors are read-only numpy arrays, shared by every VM

    def _resolve(self, name: str) -> Callable | None:
        if name == CALL_PY_FUNC:
            return self.py_functions
        for library in self._device_libraries + self.exe.imports:
            found = library.get_function(name)
            if found is not None:
                return found
        return get_global_func(name, allow_missing=True)

    def _init_func_pool(self) -> list:
        pool: list = []
        for index, info in enumerate(self.exe.func_table):
            if info.kind == FuncKind.PACKED_FUNC:
                found = self._resolve(info.name)
                if found is None:
                    self.unresolved_functions.append(info.name)
                    found = _unresolved(info.name)
                # A kernel's lean call path (runtime/kernels/fast_call.py) when it has one.
                pool.append(getattr(found, "fast_call", None) or found)
            elif info.kind == FuncKind.VM_FUNC:
                pool.append(Closure(info.name, func_index=index))
            else:
                kernel = self._resolve(f"__vmtir__{info.name}") or _unresolved(f"__vmtir__{info.name}")
                pool.append(Closure(info.name, impl=lambda *args, kernel=kernel: kernel(self, *args)))
        return pool

    def _decode(self, hooked: bool) -> list:
        bytecode = [empty_function(self.exe, index) if info.kind == FuncKind.VM_FUNC else None
                    for index, info in enumerate(self.exe.func_table)]
        for function in bytecode:
            if function is not None:
                decode_function(self.exe, function, self, self.constants, self.func_pool, bytecode, hooked)
        if not hooked and self.memory == "pooled":
            install_sites(self, self.exe, bytecode, self.constants)  # static shapes: storage kept across calls
        if not hooked:
            install_checks(self.exe, bytecode, self.constants)  # entry checks with constant arguments
        self._function_of_code = {id(function.code): function for function in bytecode if function is not None}
        return bytecode

    def _fuse_static_calls(self) -> None:
        """The interpreter's static allocations with their calls, one instruction each (static_calls.py);
        compiled mode compiles the code unfused, and the instrument sees every call. CPU memory only:
        the reuse check counts numpy's references (a cupy view need not hold its base)."""
        if (self.exec_mode == "interp" and self.memory == "pooled" and self._instrument is None
                and self.devices[0].device_type == CPU):
            fuse_static_calls(self.exe, self._bytecode)

    def allocator(self, device_index: int):
        """The allocator of device `device_index` (-1: the host CPU), made on first use."""
        if device_index == -1:
            device_index = len(self.devices) - 1
        if not 0 <= device_index < len(self.devices):
            raise VMError(f"device index {device_index} is out of the VM's {len(self.devices)} devices")
        if self._allocators[device_index] is None:
            self._allocators[device_index] = make_allocator(self.memory, self.devices[device_index])
        return self._allocators[device_index]

    # ---- running -----------------------------------------------------------------------

    def _function(self, name: str):
        for function in self._bytecode:
            if function is not None and function.name == name:
                return function
        return None

    def invoke_closure(self, closure, *args):
        """Calls a Closure (bytecode or packed) or a plain callable with `args`."""
        if isinstance(closure, Closure):
            args = args + closure.bound_args
            if closure.func_index is not None:
                return self._execute(self._bytecode[closure.func_index], args)
            return closure.impl(*args)
        if callable(closure):
            return closure(*args)
        raise VMError(f"cannot call a {type(closure).__name__}: not a function or closure")

    def _execute(self, function, args: tuple):
        if len(args) != function.num_args:
            raise VMError(f"function '{function.name}' takes {function.num_args} arguments, got {len(args)}")
        if self._compiled is not None and self._instrument is None:
            return self._compiled[function.index](*args)
        regs = function.template.copy()
        regs[:function.num_args] = args
        code = function.code
        pc = 0
        stack: list = []  # caller frames: (code, pc, regs, dst)
        max_frames = MAX_FRAMES
        try:
            while True:
                instr = code[pc]
                op = instr[0]
                if op == CALL:
                    regs[instr[3]] = instr[1](*instr[2](regs))
                    pc += 1
                elif op == ALLOC_CALL3:  # ALLOC_CALL of three arguments, read by slot
                    _, site, tensor_dst, target, first, second, third, call_pc, dst = instr
                    view = site.view
                    if getrefcount(view) != site.view_refs or getrefcount(site.raw) != site.raw_refs:
                        view = site.made()
                    regs[tensor_dst] = view
                    pc = call_pc
                    regs[dst] = target(regs[first], regs[second], regs[third])
                    pc += 1
                elif op == ALLOC_CALL2:  # ... and of two
                    _, site, tensor_dst, target, first, second, call_pc, dst = instr
                    view = site.view
                    if getrefcount(view) != site.view_refs or getrefcount(site.raw) != site.raw_refs:
                        view = site.made()
                    regs[tensor_dst] = view
                    pc = call_pc
                    regs[dst] = target(regs[first], regs[second])
                    pc += 1
                elif op == ALLOC_CALL:  # static_calls.py: the tensor, then the call at instr[5]
                    site = instr[1]
                    view = site.view  # reused while only the sites hold it (StaticTensor)
                    if getrefcount(view) != site.view_refs or getrefcount(site.raw) != site.raw_refs:
                        view = site.made()
                    regs[instr[2]] = view
                    pc = instr[5]
                    regs[instr[6]] = instr[3](*instr[4](regs))
                    pc += 1
                elif op == CALL1:
                    regs[instr[3]] = instr[1](regs[instr[2]])
                    pc += 1
                elif op == CALL0:
                    regs[instr[3]] = instr[1]()
                    pc += 1
                elif op == RET:
                    if not stack:
                        return regs[instr[1]]
                    value = regs[instr[1]]
                    code, pc, regs, dst = stack.pop()
                    regs[dst] = value
                    pc += 1
                elif op == GOTO:
                    pc = instr[1]
                elif op == IF:
                    pc = pc + 1 if regs[instr[1]] else instr[2]
                elif op == CALL_VM1:
                    if len(stack) >= max_frames:
                        raise VMError(call_stack_overflow(max_frames))
                    stack.append((code, pc, regs, instr[3]))
                    value = regs[instr[2]]
                    regs = instr[4].copy()
                    regs[0] = value
                    code = instr[1]
                    pc = 0
                elif op == CALL_VM:
                    if len(stack) >= max_frames:
                        raise VMError(call_stack_overflow(max_frames))
                    stack.append((code, pc, regs, instr[3]))
                    values = instr[2](regs)
                    regs = instr[4].copy()
                    regs[:instr[5]] = values
                    code = instr[1]
                    pc = 0
                elif op == CALL_CLOSURE:
                    # invoke_closure(vm, closure, *args): a bytecode closure runs in this loop, so
                    # recursion through closures does not recurse in Python either.
                    args = instr[2](regs)
                    closure = args[1]
                    if type(closure) is Closure and closure.func_index is not None:
                        callee = self._bytecode[closure.func_index]
                        args = args[2:] + closure.bound_args
                        if len(args) != callee.num_args:
                            raise VMError(f"closure of '{callee.name}' called with {len(args)} arguments, "
                                          f"it takes {callee.num_args}")
                        if len(stack) >= max_frames:
                            raise VMError(call_stack_overflow(max_frames))
                        stack.append((code, pc, regs, instr[3]))
                        regs = callee.template.copy()
                        regs[:callee.num_args] = args
                        code = callee.code
                        pc = 0
                    else:
                        regs[instr[3]] = self.invoke_closure(*args[1:])
                        pc += 1
                else:  # CALL_HOOKED, only while an instrument is set
                    regs[instr[3]] = self._hooked_call(instr, regs)
                    pc += 1
        except Exception as error:  # noqa: BLE001 - every failure gets the VM backtrace
            failure = self._with_backtrace(error, stack, code, pc)
            if failure is error:
                raise
            raise failure from error

    def _frame(self, code: list, pc: int) -> Frame:
        function = self._function_of_code.get(id(code))
        if function is None:
            return Frame("<replaced by set_instrument>", pc)
        return Frame(function.name, pc, self.exe.source_locations.get(function.start_instr + pc))

    def _with_backtrace(self, error: Exception, stack: list, code: list, pc: int) -> VMError:
        frames = tuple(self._frame(c, p) for c, p, _, _ in stack) + (self._frame(code, pc),)
        return self._with_frames(error, frames)

    def _with_frames(self, error: Exception, frames: tuple) -> VMError:
        """`error` with `frames` (outermost first) in front of its backtrace, as a VMError."""
        if isinstance(error, VMError):  # keeps its class (kernels raise subclasses), gains the frames
            error.backtrace = frames + error.backtrace
            return error
        if isinstance(error, RecursionError):  # compiled mode's bytecode calls, or packed functions calling back
            message = call_stack_overflow(sys.getrecursionlimit(), " (Python's recursion limit)")
        elif isinstance(error, UserError):
            message = str(error)
        else:
            message = f"{type(error).__name__}: {error}"
        return VMError(message, frames)

    def _hooked_call(self, instr: tuple, regs: list):
        _, target, gather, dst, name, callee = instr
        args = gather(regs)
        instrument = self._instrument
        kind = instrument(target, name, True, None, *args) if instrument else None
        if kind == VMInstrumentReturnKind.SKIP_RUN:
            result = regs[dst]
        elif callee is not None:
            result = self._execute(callee, args)
        else:
            result = target(*args)
        if instrument:
            instrument(target, name, False, result, *args)
        return result

    def set_instrument(self, instrument: Callable | None) -> None:
        """Calls `instrument(func, func_symbol, before_run, ret_value, *args)` around every Call.

        Returning VMInstrumentReturnKind.SKIP_RUN before a call skips it (its destination
        register keeps its value). Instrumented calls between bytecode functions recurse in
        Python. `None` removes the instrument.
        """
        self._instrument = instrument
        self._bytecode = self._decode(hooked=instrument is not None)
        if instrument is None:
            self._fuse_static_calls()

    def time_evaluator(self, func_name: str, dev=None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, cooldown_interval_ms: float = 0, repeats_to_cooldown: int = 1):
        from .profiling import time_evaluator

        return time_evaluator(self, func_name, number, repeat, min_repeat_ms, cooldown_interval_ms,
                              repeats_to_cooldown)

    def profile(self, func_name: str, *args):
        """Runs `func_name` once and reports the time spent in each called function."""
        from .profiling import profile

        return profile(self, func_name, args)
