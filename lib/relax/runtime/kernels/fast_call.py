"""The lean call path of a kernel: argument checks and layout decided once, at load time.

`make_fast_call(kernel)` returns a plain function taking the kernel's arguments, or
None when the kernel is not eligible. Eligible kernels have only buffer parameters,
static shapes, no workspace and no scalar result: then everything the call needs except
the data pointers is known at load time, the thread count included. A parallel kernel
whose buffers reach the library's `parallel_threshold_bytes` gets `ctx->num_threads =
min(library.num_threads, MAX_THREADS)` (RELAX_NUM_THREADS, as on the checked path),
read when the fast call is made; any other kernel runs on one thread. (A later change
of `library.num_threads` reaches the checked path only.) The function is built with `compile()` from
text this module generates out of the kernel's verified metadata; the text holds only
positional names (a0, a1, ...) and integers, never a name read from the file, and
every other value reaches it through the function's globals.

On each call the function checks every argument in one expression (exact ndarray,
the very dtype object, the static shape, C-contiguity, alignment, no overlap of a
written buffer with another argument for `tir.noalias` kernels), stores the data
pointers in a ctypes array allocated once, and calls the native symbol through a
CFUNCTYPE whose arguments are plain addresses (the cheapest conversion ctypes has).
Anything unusual — a check that fails, a non-zero return code, another thread using
the same preallocated arrays — goes to the kernel's checked path
(`KernelFunction.__call__`), which re-checks everything and reports the error with
its usual message (a kernel that failed is simply run again there: kernels have no
side effects besides their outputs).

Data pointers are read from the array object itself (numpy's `PyArrayObject` keeps
`data` right after the object header), which costs a fraction of
`__array_interface__`; `DATA_OFFSET_OK` checks that layout once per process and the
fast path is off if it does not hold.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from . import abi, fast_native

# CPython object header: reference count and type pointer, then numpy's `char *data`.
DATA_OFFSET = 2 * ctypes.sizeof(ctypes.c_void_p)
_read_pointer = ctypes.c_void_p.from_address

_ADDRESS_CFUNCTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def _data_offset_ok() -> bool:
    probe = np.arange(3, dtype=np.float32)[1:]
    return _read_pointer(id(probe) + DATA_OFFSET).value == probe.__array_interface__["data"][0]


DATA_OFFSET_OK = _data_offset_ok()


def eligible(kernel) -> bool:
    info = kernel.info
    if not DATA_OFFSET_OK or info.ret_dtype or info.symbolic_vars or info.workspace_bytes != 0:
        return False
    if any(p.kind != "buffer" or any(d.__class__ is not int for d in p.shape) for p in info.params):
        return False
    if any(dtype is None for _, _, dtype, _ in kernel._buffers):
        return False
    return True


def static_threads(kernel) -> int:
    """ctx->num_threads for an eligible kernel: the checked path's rule, decided once."""
    library = kernel.library
    if kernel.info.parallel and _static_bytes(kernel) >= library.parallel_threshold_bytes:
        return max(1, min(int(library.num_threads), abi.MAX_THREADS))
    return 1


def _static_bytes(kernel) -> int:
    total = 0
    for _, param, dtype, _ in kernel._buffers:
        count = 1
        for dim in param.shape:
            count *= dim
        total += count * dtype.itemsize
    return total


def make_fast_call(kernel):
    """A function running `kernel` on its arguments with the fewest Python operations, or None."""
    if not eligible(kernel):
        return None
    buffers = kernel._buffers
    count = len(buffers)
    pointers = (ctypes.c_void_p * max(1, count))()
    scalars = (ctypes.c_int64 * 1)()
    context = abi.KernelContext()
    context.abi_version = abi.KERNEL_ABI_VERSION
    context.num_threads = static_threads(kernel)
    namespace = {
        "ndarray": np.ndarray, "read": _read_pointer, "P": pointers, "lock": threading.Lock(),
        "native": _ADDRESS_CFUNCTYPE(ctypes.cast(kernel._cfunc, ctypes.c_void_p).value),
        "ADDRESSES": (ctypes.addressof(pointers), ctypes.addressof(scalars), ctypes.addressof(context)),
        "checked": kernel.__call__,
        # Kept alive with the function: the native call reads them.
        "_keep": (pointers, scalars, context),
    }
    checks, loads, sizes = [], [], {}
    for index, (_, param, dtype, _) in enumerate(buffers):
        namespace[f"D{index}"] = dtype
        namespace[f"S{index}"] = tuple(param.shape)
        checks.append(f"a{index}.__class__ is ndarray and a{index}.dtype is D{index} and a{index}.shape == S{index} "
                      f"and a{index}.flags.c_contiguous")
        loads.append(f"p{index} = read(id(a{index}) + {DATA_OFFSET}).value")
        sizes[index] = array_nbytes(param.shape, dtype)
    pointer_checks = [f"p{i} % {dtype.itemsize} == 0" for i, (_, _, dtype, _) in enumerate(buffers) if dtype.itemsize > 1]
    pointer_checks += _overlap_checks(kernel, sizes)
    args = ", ".join(f"a{i}" for i in range(count))
    native_entry = fast_native.native_entry(kernel, sizes, buffers_overlap(kernel, sizes)) if count else None
    if native_entry is not None:
        namespace["entry"] = native_entry
        lines = ["def fast_call(*args):", "    if entry(args):", "        return checked(*args)"]
        function = _finish(kernel, lines, namespace)
        # Generated callers (vm/machine/compiled_mode.py) may call these two themselves: `if entry(args): checked(*args)`.
        function.entry, function.checked = native_entry, kernel.__call__
        # The same call as one C-level builtin (fast_native.native_builtin): the interpreter calls it.
        function.builtin = fast_native.native_builtin(kernel, function.checked)
        return function
    lines = [f"def fast_call({args}):"]
    lines.append(f"    if not ({' and '.join(checks) or 'True'}) or not lock.acquire(False):")
    lines.append(f"        return checked({args})")
    lines.append("    try:")
    lines += [f"        {load}" for load in loads]
    if pointer_checks:
        lines.append(f"        if not ({' and '.join(pointer_checks)}):")
        lines.append(f"            return checked({args})")
    lines += [f"        P[{i}] = p{i}" for i in range(count)]
    lines.append("        code = native(*ADDRESSES)")
    lines.append("    finally:")
    lines.append("        lock.release()")
    lines.append("    if code:")
    lines.append(f"        return checked({args})")
    return _finish(kernel, lines, namespace)


def _finish(kernel, lines: list, namespace: dict):
    text = "\n".join(lines) + "\n"
    exec(compile(text, f"<kernel {kernel.name}: fast call>", "exec"), namespace)  # noqa: S102 - generated text
    function = namespace["fast_call"]
    function.__qualname__ = function.__name__ = f"fast_call[{kernel.name}]"
    function.kernel = kernel
    function.source = text
    return function


def array_nbytes(shape, dtype) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count * dtype.itemsize


def buffers_overlap(kernel, sizes: dict[int, int]) -> list[tuple[int, int, int, int]]:
    """For tir.noalias kernels, (written, other, written bytes, other bytes): pairs that must be disjoint."""
    if not kernel.info.noalias or len(sizes) < 2:
        return []
    index_of = {param.name: index for index, (_, param, _, _) in enumerate(kernel._buffers)}
    pairs = []
    for name in kernel.info.writes:
        written = index_of.get(name)
        if written is None or not sizes[written]:
            continue
        pairs += [(written, other, sizes[written], size) for other, size in sizes.items() if other != written and size]
    return pairs


def _overlap_checks(kernel, sizes: dict[int, int]) -> list[str]:
    return [f"(p{w} >= p{o} + {o_size} or p{o} >= p{w} + {w_size})" for w, o, w_size, o_size in buffers_overlap(kernel, sizes)]
