"""Loading a kernel object in-process and calling its kernels with numpy arrays.

`load_kernel_library(data)` picks the .ko entry that runs on this host (native
object first, else bitcode compiled on load), links it with llvmlite's MCJIT and
returns a KernelLibrary. `library.get_function(name)` gives a callable taking
the kernel's parameters in order (numpy arrays for buffers, Python or numpy
numbers for scalars); outputs are pre-allocated arrays passed like inputs
(destination passing). Every argument is checked against the metadata first;
the call itself runs without the GIL (ctypes releases it).
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct

import llvmlite.binding as llvm
import numpy as np

from ...diagnostics import UserError
from ..errors import VMError
from . import abi, container
from .host import host, host_machine, host_target_machine, initialize_llvm, runs_natively, same_platform
from .elf_alignment import with_load_alignment
from .elf_check import ObjectError, check_object, object_format_of
from .fast_call import make_fast_call
from .kernel_signatures import check_signatures
from .libmvec import extensions_of
from .llvm_compile import compile_bitcode
from .metadata import KernelInfo, evaluate, format_expr
from .object_symbols import missing_symbols, undefined_symbols
from .thread_pool import POOL_LAUNCH, ensure_pool

# Below this many bytes of buffer data a parallel kernel runs on one thread. The code
# generator marks a kernel parallel only where its loop has enough work (codegen/parallel.py);
# this gate keeps calls on data that fits one core's L1 off the pool. Counting bytes is
# no measure of work beyond that: a convolution does thousands of multiply-adds a byte.
PARALLEL_THRESHOLD_BYTES = 32 * 1024

_NUMPY_DTYPES = {
    "bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
}


def _scalar_result(dtype: str, word: int):
    """A kernel's T.ret value from its 64-bit word, as a numpy scalar of `dtype`."""
    if dtype.startswith("float"):
        return np.dtype(_NUMPY_DTYPES[dtype]).type(struct.unpack("<d", struct.pack("<q", word))[0])
    if dtype == "bool":
        return np.bool_(word != 0)
    return np.array(word, np.int64).astype(_NUMPY_DTYPES.get(dtype, np.int64))[()]


class KernelCallError(VMError):
    """A kernel was called with wrong arguments, or reported a failure."""


def default_num_threads() -> int:
    value = os.environ.get("RELAX_NUM_THREADS")
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise UserError(f"RELAX_NUM_THREADS must be a positive integer, not '{value}'") from None
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


class KernelFunction:
    """One kernel, callable with numpy arrays and numbers in parameter order."""

    def __init__(self, library: "KernelLibrary", info: KernelInfo, address: int):
        self.library = library
        self.info = info
        self.name = info.name
        self._cfunc = abi.KERNEL_CFUNCTYPE(address)
        # What every call needs, worked out once.
        self._buffers = [(position, param, numpy_dtype(param.dtype), len(param.shape))
                         for position, param in enumerate(info.params) if param.kind == "buffer"]
        self._scalars = [(position, param) for position, param in enumerate(info.params) if param.kind == "scalar"]
        self._buffer_array = ctypes.c_void_p * max(1, len(self._buffers))
        self._scalar_array = ctypes.c_int64 * max(1, len(self._scalars) + len(info.symbolic_vars))
        self._static_workspace = info.workspace_bytes if isinstance(info.workspace_bytes, int) else None
        # The lean path for static-shape kernels (fast_call.py); the VM calls it instead of __call__.
        self.fast_call = make_fast_call(self)

    def _fail(self, message: str) -> KernelCallError:
        return KernelCallError(f"kernel '{self.name}': {message}")

    def _bind_buffer(self, param, expected, ndim, value, values: dict[str, int]) -> int:
        """Checks one array and binds the sizes it determines; returns its data address."""
        if not isinstance(value, np.ndarray):
            raise self._fail(f"parameter '{param.name}' expects a {param.dtype} tensor, got {type(value).__name__}")
        if expected is None or value.dtype != expected:
            raise self._fail(f"parameter '{param.name}' expects dtype {param.dtype}, got {value.dtype}")
        if value.ndim != ndim:
            raise self._fail(
                f"parameter '{param.name}' expects {ndim} dimensions "
                f"{tuple(format_expr(d) for d in param.shape)}, got shape {value.shape}"
            )
        if not value.flags.c_contiguous:
            raise self._fail(f"parameter '{param.name}' must be a C-contiguous (compact row-major) array")
        address = value.__array_interface__["data"][0]
        if address % value.dtype.itemsize:
            raise self._fail(f"parameter '{param.name}' is not aligned to its {value.dtype.itemsize}-byte elements")
        for axis, dim in enumerate(param.shape):
            if dim.__class__ is str and dim not in values:
                values[dim] = value.shape[axis]
        return address

    def _check_shapes(self, buffers, values: dict[str, int]) -> None:
        for param, array, _ in buffers:
            for axis, dim in enumerate(param.shape):
                if dim.__class__ is int:
                    expected = dim
                else:
                    try:
                        expected = evaluate(dim, values)
                    except KeyError as exc:
                        raise self._fail(f"cannot bind symbolic size {exc} from the shape of '{param.name}'") from None
                if expected != array.shape[axis]:
                    wanted = str(expected) if dim.__class__ is int else f"{format_expr(dim)} = {expected}"
                    raise self._fail(f"parameter '{param.name}' dimension {axis} must be {wanted}, "
                                     f"got shape {array.shape}")

    def _scalar_word(self, param, value) -> int:
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if param.dtype.startswith("float"):
            if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
                raise self._fail(f"parameter '{param.name}' expects a {param.dtype} scalar, got {value!r}")
            return struct.unpack("<q", struct.pack("<d", float(value)))[0]
        if not isinstance(value, (int, np.integer, bool, np.bool_)):
            raise self._fail(f"parameter '{param.name}' expects a {param.dtype} scalar, got {value!r}")
        word = int(value)
        if not -(1 << 63) <= word < (1 << 64):
            raise self._fail(f"parameter '{param.name}': {word} does not fit in 64 bits")
        return word - (1 << 64) if word >= (1 << 63) else word

    def _check_overlap(self, buffers) -> None:
        """A noalias kernel may not write a buffer that overlaps another argument."""
        spans = [(address, address + array.nbytes, param.name) for param, array, address in buffers if array.nbytes]
        for written in self.info.writes:
            for start, end, name in spans:
                if name != written:
                    continue
                for other_start, other_end, other in spans:
                    if other != name and other_start < end and start < other_end:
                        raise self._fail(f"output '{name}' overlaps argument '{other}' "
                                         "(the kernel is compiled assuming no aliasing)")

    def __call__(self, *args):
        info = self.info
        if len(args) != len(info.params):
            raise self._fail(f"expects {len(info.params)} arguments, got {len(args)}")
        values: dict[str, int] = {}
        scalars = []
        # Integer scalar parameters bind first: a buffer whose shape names one is checked against it.
        for position, param in self._scalars:
            scalars.append(self._scalar_word(param, args[position]))
            if not param.dtype.startswith("float"):
                values[param.name] = scalars[-1]
        buffers = [(param, args[position], self._bind_buffer(param, expected, ndim, args[position], values))
                   for position, param, expected, ndim in self._buffers]
        self._check_shapes(buffers, values)
        if info.noalias and len(buffers) > 1:
            self._check_overlap(buffers)
        for var in info.symbolic_vars:
            if var not in values:
                raise self._fail(f"symbolic size '{var}' is not determined by any argument")
            scalars.append(values[var])
        return self._invoke(buffers, scalars, values)

    def _invoke(self, buffers, scalars, values):
        info = self.info
        buffer_words = self._buffer_array(*[address for _, _, address in buffers])
        scalar_words = self._scalar_array(*scalars)
        context = abi.KernelContext()
        context.abi_version = abi.KERNEL_ABI_VERSION
        threads = 1
        if info.parallel and sum(array.nbytes for _, array, _ in buffers) >= self.library.parallel_threshold_bytes:
            threads = max(1, min(self.library.num_threads, abi.MAX_THREADS))
        context.num_threads = threads
        workspace_size = self._static_workspace
        if workspace_size is None:
            workspace_size = evaluate(info.workspace_bytes, values)
        workspace = None
        if workspace_size > 0:
            workspace = np.empty(workspace_size + abi.WORKSPACE_ALIGNMENT, dtype=np.uint8)
            base = workspace.__array_interface__["data"][0]
            context.workspace = base + (-base) % abi.WORKSPACE_ALIGNMENT
            context.workspace_size = workspace_size
        code = self._cfunc(buffer_words, scalar_words, ctypes.byref(context))
        del workspace
        if code != abi.SUCCESS:
            message = context.error_message.decode("utf-8", "replace") if context.error_message else ""
            if code == abi.INDEX_OUT_OF_RANGE:  # the message names the index, which the kernel passes apart
                raise self._fail(message.replace(abi.INDEX_PLACEHOLDER, str(context.return_value)))
            meaning = abi.RETURN_CODES.get(code, f"error code {code}")
            raise self._fail(f"{meaning}: {message}" if message else meaning)
        return _scalar_result(info.ret_dtype, context.return_value) if info.ret_dtype else None

    def __repr__(self) -> str:
        return f"<KernelFunction {self.name}>"


def numpy_dtype(name: str):
    return np.dtype(_NUMPY_DTYPES[name]) if name in _NUMPY_DTYPES else None


class KernelLibrary:
    """The kernels of one .ko, linked into this process."""

    def __init__(self, kernel_object: container.KernelObject, entry_index: int, object_code, compiled: bool):
        """`object_code`: the target's native object, or its objects (one per part, format 0.3)."""
        initialize_llvm()
        self.kernel_object = kernel_object
        self.target = kernel_object.targets[entry_index]
        self.compiled_on_load = compiled
        self.num_threads = default_num_threads()
        self.parallel_threshold_bytes = PARALLEL_THRESHOLD_BYTES
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), host_target_machine())
        for code in (object_code,) if isinstance(object_code, (bytes, bytearray)) else object_code:
            self._engine.add_object_file(llvm.ObjectFileRef.from_data(with_load_alignment(code)))
        self._engine.finalize_object()
        self._functions: dict[str, KernelFunction] = {}

    def get_function(self, name: str) -> KernelFunction | None:
        if name in self._functions:
            return self._functions[name]
        info = self.kernel_object.kernel(name)
        if info is None:
            return None
        address = self._engine.get_function_address(info.symbol)
        if not address:
            raise UserError(f"kernel object: symbol '{info.symbol}' of kernel '{name}' is missing from the native code")
        function = self._functions[name] = KernelFunction(self, info, address)
        return function

    def list_functions(self) -> list[str]:
        return [info.name for info in self.kernel_object.kernels]

    def __contains__(self, name: str) -> bool:
        return self.kernel_object.kernel(name) is not None


def _check_abi(kernel_object: container.KernelObject, name: str) -> None:
    versions = [t.abi_version for t in kernel_object.targets] + [k.abi_version for k in kernel_object.kernels]
    for version in versions:
        if version > abi.KERNEL_ABI_VERSION:
            raise UserError(
                f"'{name}' was built for kernel ABI version {version}, newer than the "
                f"supported version {abi.KERNEL_ABI_VERSION}; rebuild it with this toolchain"
            )
        if version < 1:
            raise UserError(f"'{name}' names kernel ABI version {version}, which does not exist")


def load_kernel_library(data, name: str = "<memory>", prefer: str = "native") -> KernelLibrary:
    """Links the entry of a .ko (bytes or KernelObject) that runs on this host.

    `prefer="bitcode"` skips native objects and compiles the bitcode (for tests).
    """
    kernel_object = data if isinstance(data, container.KernelObject) else container.read(data, name)
    _check_abi(kernel_object, name)
    info = host()
    unresolved: list[str] = []
    if prefer != "bitcode":
        for index, entry in enumerate(kernel_object.targets):
            if index in kernel_object.objects and runs_natively(entry.triple, entry.cpu, entry.features, info):
                codes = kernel_object.native_objects(index)
                unresolved = [symbol for code in codes for symbol in _unresolved(code)]
                if not unresolved:
                    return KernelLibrary(kernel_object, index, codes, compiled=False)
    for index, entry in enumerate(kernel_object.targets):
        if index in kernel_object.bitcode and same_platform(entry.triple, info.triple):
            machine, extensions = host_machine(), extensions_of(info.enabled_features)
            codes = tuple(compile_bitcode(code, machine, extensions) for code in kernel_object.bitcode_parts(index))
            if kernel_object.signed:
                _check_compiled_signatures(kernel_object, index, codes, info.triple, name)
            unresolved = [symbol for code in codes for symbol in _unresolved(code)]
            if not unresolved:
                return KernelLibrary(kernel_object, index, codes, compiled=True)
    if unresolved:
        raise UserError(f"'{name}': its kernels need {', '.join(unresolved)}, which this process does not provide")
    targets = ", ".join(t.describe() for t in kernel_object.targets) or "none"
    raise UserError(
        f"'{name}' has no kernels that run on this host ({info.triple}, cpu {info.cpu}); "
        f"its targets: {targets}"
    )


def _check_compiled_signatures(kernel_object, index: int, codes, triple: str, name: str) -> None:
    """What LLVM compiled from a 0.5 .ko's bitcode stores each kernel's signature digest, as
    its native objects do (kernel_signatures.py): bitcode of another kernel placed under this
    metadata, code hashes recomputed, is refused before MCJIT links it."""
    checked = [check_object(code, triple, object_format_of(triple)) for code in codes]
    if all(elf is not None and elf.strict for elf in checked):
        try:
            check_signatures(checked, kernel_object.kernels)
        except ObjectError as exc:
            raise UserError(f"'{name}' is not a valid kernel object: the bitcode of target {index} "
                            f"({kernel_object.targets[index].triple}): {exc}") from None


def _unresolved(code: bytes) -> list[str]:
    """Undefined symbols of a native object that the process cannot provide (MCJIT would bind them to 0)."""
    _ensure_engine()
    names = undefined_symbols(code)
    if names is None or POOL_LAUNCH in names:
        ensure_pool()  # parallel loops call the process's thread pool (thread_pool.py)
    return missing_symbols(names)


@functools.cache
def _ensure_engine():
    """An MCJIT engine, kept alive, so that symbol lookups search the whole process."""
    initialize_llvm()
    return llvm.create_mcjit_compiler(llvm.parse_assembly(""), host_target_machine())


def load_kernel_file(path: str, prefer: str = "native") -> KernelLibrary:
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as exc:
        raise UserError(f"'{path}': {exc.strerror.lower() if exc.strerror else exc}") from None
    return load_kernel_library(data, path, prefer)
