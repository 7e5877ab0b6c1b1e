"""LLVM as a build calls it: libllvmlite's C functions (llvm_library.py), not llvmlite.binding.

Importing llvmlite.binding declares a ctypes prototype for each of its several hundred
C functions at every tool start, and each call then takes llvmlite's process-wide lock,
so that threads compiling modules of their own take turns. A build needs about fifty
of those functions: this module calls them through llvm_library.py, without a lock.
LLVM lets threads work at once on distinct contexts, modules and target machines, as
the part compiler does (codegen/object_parts.py); what is global (the target registry)
is set up once, under a lock of this module.

    initialize()                         every target LLVM was built with, registered once
    process_triple(), host_cpu_name(), host_cpu_features(), llvm_version()
    TargetMachine(triple, cpu, features, opt, reloc, code_model, abi)
        .data_layout, .emit(module, assembly=False) -> bytes
    with Context() as context: module = Module.parse(text, context); module.link_in(other)
        Module.parse_bitcode(data, context)
        module.verify(), .bitcode(), str(module), .function_names(), .declares(name),
        .rename_function(name, new_name), .set_triple(t), .set_data_layout(l)
    optimize(module, machine, speed_level, slp)      LLVM's default pipeline, in place
"""

from __future__ import annotations

import ctypes
import functools
import threading
from ctypes import c_char_p, c_size_t, c_void_p

from .llvm_library import library

_LOCK = threading.Lock()  # the target registry's set-up
_initialized = False


def initialize() -> None:
    """Registers the native target and every target LLVM was built with (once a process:
    the registry is global, and a thread must not look a target up while another adds it)."""
    global _initialized
    if _initialized:
        return
    lib = library()
    with _LOCK:
        if not _initialized:
            lib.LLVMPY_InitializeAllTargetInfos()
            lib.LLVMPY_InitializeAllTargets()
            lib.LLVMPY_InitializeAllTargetMCs()
            lib.LLVMPY_InitializeAllAsmPrinters()
            lib.LLVMPY_InitializeNativeTarget()
            lib.LLVMPY_InitializeNativeAsmPrinter()
            _initialized = True


def _taken(out: c_char_p) -> str:
    """The text of a string LLVM returned through an out-argument, which is freed here."""
    if not out:
        return ""
    try:
        return out.value.decode("utf-8", "replace")
    finally:
        library().LLVMPY_DisposeString(ctypes.cast(out, c_void_p))


def _string_call(name: str, *arguments) -> str:
    out = c_char_p()
    getattr(library(), name)(*arguments, ctypes.byref(out))
    return _taken(out)


def process_triple() -> str:
    return _string_call("LLVMPY_GetProcessTriple")


def host_cpu_name() -> str:
    return _string_call("LLVMPY_GetHostCPUName")


def host_cpu_features() -> str:
    """The host CPU's features as llvmlite's FeatureMap.flatten() spells them: "+a,-b,...",
    sorted by name (empty where LLVM cannot tell)."""
    enabled = {entry[1:]: entry[0] == "+" for entry in _string_call("LLVMPY_GetHostCPUFeatures").split(",") if entry}
    return ",".join(("+" if on else "-") + name for name, on in sorted(enabled.items()))


@functools.cache
def llvm_version() -> tuple[int, ...]:
    packed, parts = library().LLVMPY_GetVersionInfo(), []
    while packed:
        parts.append(packed & 0xFF)
        packed >>= 8
    return tuple(reversed(parts))


def known_target(triple: str) -> bool:
    """Whether this LLVM has a backend for `triple`."""
    try:
        _target(triple)
    except LookupError:
        return False
    return True


def _target(triple: str):
    """LLVM's Target (a backend) for `triple`; LookupError with LLVM's message when it has none."""
    initialize()
    error = c_char_p()
    target = library().LLVMPY_GetTargetFromTriple(triple.encode(), ctypes.byref(error))
    message = _taken(error)
    if not target:
        raise LookupError(message)
    return target


class TargetMachine:
    """An LLVM TargetMachine: code generation for one triple, CPU and feature set. Used by
    one thread at a time. A triple with no backend in this LLVM raises LookupError."""

    def __init__(self, triple: str, cpu: str = "", features: str = "", opt: int = 2, reloc: str = "default",
                 code_model: str = "jitdefault", abi: str = ""):
        target, lib = _target(triple), library()
        self._handle = lib.LLVMPY_CreateTargetMachine(target, triple.encode(), cpu.encode(), features.encode(),
                                                      opt, reloc.encode(), code_model.encode(), 0, 0, abi.encode())
        if not self._handle:
            raise RuntimeError("Cannot create target machine")
        self._dispose = lib.LLVMPY_DisposeTargetMachine  # held: a machine may outlive the module at exit
        self.triple = triple

    @functools.cached_property
    def data_layout(self) -> str:
        lib = library()
        data = lib.LLVMPY_CreateTargetMachineData(self._handle)
        try:
            return _string_call("LLVMPY_CopyStringRepOfTargetData", data)
        finally:
            lib.LLVMPY_DisposeTargetData(data)

    def emit(self, module: "Module", assembly: bool = False) -> bytes:
        """`module`'s native object (its assembly text, encoded, with `assembly`)."""
        lib, error = library(), c_char_p()
        buffer = lib.LLVMPY_TargetMachineEmitToMemory(self._handle, module.handle, int(not assembly),
                                                      ctypes.byref(error))
        message = _taken(error)
        if not buffer:
            raise RuntimeError(message)
        try:
            return ctypes.string_at(lib.LLVMPY_GetBufferStart(buffer), lib.LLVMPY_GetBufferSize(buffer))
        finally:
            lib.LLVMPY_DisposeMemoryBuffer(buffer)

    def __del__(self):
        if getattr(self, "_handle", None):
            self._dispose(self._handle)


class Context:
    """An LLVMContext and the modules parsed into it, all freed when the `with` block ends."""

    def __init__(self):
        self.handle = library().LLVMPY_ContextCreate()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc) -> None:
        library().LLVMPY_ContextDispose(self.handle)  # the modules it still owns go with it
        self.handle = None


class Module:
    """A module of a Context (valid while the context is)."""

    def __init__(self, handle):
        self.handle = handle

    @classmethod
    def parse(cls, text: str, context: Context) -> "Module":
        error = c_char_p()
        handle = library().LLVMPY_ParseAssembly(context.handle, text.encode(), ctypes.byref(error))
        message = _taken(error)
        if not handle:
            raise RuntimeError(f"LLVM IR parsing error\n{message}")
        return cls(handle)

    @classmethod
    def parse_bitcode(cls, bitcode: bytes, context: Context) -> "Module":
        error = c_char_p()
        handle = library().LLVMPY_ParseBitcode(context.handle, bitcode, len(bitcode), ctypes.byref(error))
        message = _taken(error)
        if not handle:
            raise RuntimeError(f"LLVM bitcode parsing error\n{message}")
        return cls(handle)

    def link_in(self, other: "Module") -> None:
        """Links `other` into this module; `other` is consumed."""
        error = c_char_p()
        failed = library().LLVMPY_LinkModules(self.handle, other.handle, ctypes.byref(error))
        other.handle = None
        message = _taken(error)
        if failed:
            raise RuntimeError(message)

    def verify(self) -> None:
        error = c_char_p()
        broken = library().LLVMPY_VerifyModule(self.handle, ctypes.byref(error))
        message = _taken(error)
        if broken:
            raise RuntimeError(message)

    def declares(self, name: str) -> bool:
        """Whether the module declares function `name` without defining it."""
        function = library().LLVMPY_GetNamedFunction(self.handle, name.encode())
        return bool(function) and bool(library().LLVMPY_IsDeclaration(function))

    def function_names(self) -> list[str]:
        """The names of the functions the module defines or declares."""
        lib, names = library(), []
        functions = lib.LLVMPY_ModuleFunctionsIter(self.handle)
        try:
            while function := lib.LLVMPY_FunctionsIterNext(functions):
                names.append(lib.LLVMPY_GetValueName(function).decode())
        finally:
            lib.LLVMPY_DisposeFunctionsIter(functions)
        return names

    def rename_function(self, name: str, new_name: str) -> None:
        """Renames function `name` (declared or defined), and so its calls; an intrinsic
        renamed becomes a plain function of that name."""
        function = library().LLVMPY_GetNamedFunction(self.handle, name.encode())
        if not function:
            raise KeyError(name)
        library().LLVMPY_SetValueName(function, new_name.encode())

    def set_triple(self, triple: str) -> None:
        library().LLVMPY_SetTarget(self.handle, triple.encode())

    def set_data_layout(self, layout: str) -> None:
        library().LLVMPY_SetDataLayout(self.handle, layout.encode())

    def bitcode(self) -> bytes:
        out, size = c_char_p(), c_size_t()
        library().LLVMPY_WriteBitcodeToString(self.handle, ctypes.byref(out), ctypes.byref(size))
        if not out:
            raise MemoryError
        try:
            return ctypes.string_at(out, size.value)
        finally:
            library().LLVMPY_DisposeString(ctypes.cast(out, c_void_p))

    def __str__(self) -> str:
        """The module's text. llvmlite's printer sets the process's locale to C while it prints,
        which every thread sees: never called where another thread may open a text file
        meanwhile (the part compiler's workers do not call it)."""
        return _string_call("LLVMPY_PrintModuleToString", self.handle)


def optimize(module: Module, machine: TargetMachine, speed_level: int = 3, slp: bool = True) -> None:
    """Runs LLVM's default per-module pipeline at O`speed_level` on `module`, the vectorizers and
    unrolling on from O2 (the SLP vectorizer only when `slp`: llvm_compile.slp_is_safe)."""
    lib = library()
    tuning = lib.LLVMPY_CreatePipelineTuningOptions()
    try:
        lib.LLVMPY_PTOSetLoopVectorization(tuning, speed_level >= 2)
        lib.LLVMPY_PTOSetSLPVectorization(tuning, speed_level >= 2 and slp)
        lib.LLVMPY_PTOSetLoopUnrolling(tuning, speed_level >= 2)
        builder = lib.LLVMPY_CreatePassBuilder(machine._handle, tuning)
        try:
            manager = lib.LLVMPY_buildPerModuleDefaultPipeline(builder, speed_level)
            try:
                lib.LLVMPY_RunNewModulePassManager(manager, module.handle, builder)
            finally:
                lib.LLVMPY_DisposeNewModulePassManger(manager)
        finally:
            lib.LLVMPY_DisposePassBuilder(builder)
    finally:
        lib.LLVMPY_DisposePipelineTuningOptions(tuning)
