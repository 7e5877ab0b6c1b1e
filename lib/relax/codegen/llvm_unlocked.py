"""The two long LLVM calls of a kernel build, made without llvmlite's global lock.

llvmlite serializes every call into LLVM on one process-wide lock
(llvmlite/binding/ffi.py), so threads that each compile their own module still
take turns. LLVM itself lets threads work at once on distinct LLVMContexts with
distinct TargetMachines (its own parallel code generation does so). The two calls
that take the time of a build, running the O3 pipeline and emitting machine code,
are made here through a
ctypes handle of our own on the same library, with the argument types llvmlite
declared; everything else (parsing, verifying, bitcode, pass builder set-up)
goes through llvmlite and its lock. ctypes releases the GIL for the call, so
Python threads go on meanwhile.

The caller gives each thread its own context, module and target machine
(object_parts.py does).
"""

from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm

from ..runtime.kernels.llvm_compile import pass_pipeline

_LOCK = threading.Lock()
_FUNCTIONS: dict[str, object] = {}


def _function(name: str):
    """`name` of libllvmlite as a ctypes function outside llvmlite's lock, typed as llvmlite types it
    (llvmlite's own, locked, when its library cannot be reached: the calls then take turns)."""
    function = _FUNCTIONS.get(name)
    if function is None:
        with _LOCK:
            if name not in _FUNCTIONS:
                declared = getattr(llvm.ffi.lib, name)
                try:
                    raw = getattr(ctypes.CDLL(llvm.ffi.lib._name), name)  # the library llvmlite loaded
                    raw.argtypes, raw.restype = declared.argtypes, declared.restype
                except (AttributeError, OSError):
                    raw = declared
                _FUNCTIONS[name] = raw
            function = _FUNCTIONS[name]
    return function


def optimize(module: "llvm.ModuleRef", machine: "llvm.TargetMachine", speed_level: int = 3,
             slp: bool = True) -> None:
    """What runtime.kernels.llvm_compile.optimize does, the pipeline run outside the lock
    (`slp`: llvm_compile.slp_is_safe of the module's text, which the caller already has)."""
    builder, manager = pass_pipeline(machine, speed_level, slp)
    _function("LLVMPY_RunNewModulePassManager")(manager, module, builder)


def emit_object(machine: "llvm.TargetMachine", module: "llvm.ModuleRef") -> bytes:
    """`machine.emit_object(module)`, the code generation run outside the lock."""
    with llvm.ffi.OutputString() as error:
        buffer = _function("LLVMPY_TargetMachineEmitToMemory")(machine, module, 1, error)
        if not buffer:
            raise RuntimeError(str(error))
    try:
        return ctypes.string_at(llvm.ffi.lib.LLVMPY_GetBufferStart(buffer), llvm.ffi.lib.LLVMPY_GetBufferSize(buffer))
    finally:
        llvm.ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)
