"""A native entry per static-shape kernel: the argument checks and the call in machine code.

For a kernel that fast_call.py finds eligible, `native_entry(kernel)` JIT-compiles
(llvmlite, into the kernel library's engine) a small function

    int32_t entry(PyObject *args)   /* a tuple (a0, a1, ...) */

that reads each argument's numpy array header, checks it exactly as the Python fast
path does (type is numpy.ndarray, the dtype object, rank and every dimension,
C-contiguity flag, alignment of the data pointer, no overlap of a written buffer with
another argument for `tir.noalias` kernels), and then calls the kernel with its
buffers, scalars and context on the entry's own stack (so the entry is reentrant);
the context's num_threads is fast_call.static_threads(kernel), fixed when the entries
are compiled (the thread pool handles concurrent launches). It returns the kernel's code, or -1 when a check fails; the caller then takes the
checked path, which reports the problem. ctypes passes the argument tuple as one
`py_object` (no conversion), so a call costs one foreign call with one argument.

The header offsets are numpy's public `PyArrayObject_fields` layout (data, nd,
dimensions, strides, base, descr, flags after the object header) and CPython's
`PyTupleObject` (size, then items). `LAYOUT_OK` checks
them once per process against what numpy reports for probe arrays; where they do not
hold (or pointers are not 64-bit), there is no native entry and fast_call.py's Python
path is used.
"""

from __future__ import annotations

import ctypes
import itertools

import llvmlite.binding as llvm
import numpy as np

from . import abi
from .host import host, host_target_machine

TYPE, DATA, NDIM, DIMS, DESCR, FLAGS = 8, 16, 24, 32, 56, 64
TUPLE_SIZE, TUPLE_ITEMS = 16, 24  # PyTupleObject: ob_size, then the item pointers
C_CONTIGUOUS = 0x1
_counter = itertools.count()


def _read(address: int, ctype):
    return ctype.from_address(address).value


def _layout_ok() -> bool:
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return False
    try:
        for array in (np.zeros((3, 5), np.float32), np.zeros((4, 6), np.int64)[:, ::2], np.zeros(7, np.uint8)[1:]):
            base = id(array)
            dims = _read(base + DIMS, ctypes.c_void_p)
            if (_read(base + TYPE, ctypes.c_void_p) != id(np.ndarray)
                    or _read(base + DATA, ctypes.c_void_p) != array.__array_interface__["data"][0]
                    or _read(base + NDIM, ctypes.c_int32) != array.ndim
                    or tuple((ctypes.c_int64 * array.ndim).from_address(dims)) != array.shape
                    or _read(base + DESCR, ctypes.c_void_p) != id(array.dtype)
                    or bool(_read(base + FLAGS, ctypes.c_int32) & C_CONTIGUOUS) != array.flags.c_contiguous):
                return False
        probe = (np.zeros(1), "x", 3)
        if (_read(id(probe) + TUPLE_SIZE, ctypes.c_int64) != 3
                or tuple(_read(id(probe) + TUPLE_ITEMS + 8 * i, ctypes.c_void_p) for i in range(3))
                != tuple(id(item) for item in probe)):
            return False
    except Exception:  # noqa: BLE001 - any surprise: no native entries
        return False
    return True


LAYOUT_OK = _layout_ok()


def _field(lines: list, obj: str, offset: int, ty: str, name: str) -> str:
    lines.append(f"  %{name}.p = getelementptr i8, ptr %{obj}, i64 {offset}")
    lines.append(f"  %{name} = load {ty}, ptr %{name}.p")
    return f"%{name}"


def entry_ir(symbol: str, kernel_address: int, buffers: list, overlaps: list, threads: int = 1,
             fastcall=None) -> str:
    """LLVM IR of the entry. `buffers`: (descr id, shape, itemsize); `overlaps`: (written, other, sizes);
    `threads`: the context's num_threads; `fastcall`: (C API addresses, release the GIL?) for a
    METH_FASTCALL entry `{symbol}_fast` too."""
    count = len(buffers)
    type_lines, lines, conditions = [], [], []
    for i, (descr, shape, itemsize) in enumerate(buffers):
        obj = f"a{i}"
        type_lines.append(f"  %type{i}.p = getelementptr i8, ptr %{obj}, i64 {TYPE}")
        type_lines.append(f"  %type{i} = load i64, ptr %type{i}.p")
        type_lines.append(f"  %istype{i} = icmp eq i64 %type{i}, {id(np.ndarray)}")
        type_lines.append(f"  %types{i} = and i1 {'true' if i == 0 else f'%types{i - 1}'}, %istype{i}")
        conditions.append(("eq", "i64", _field(lines, obj, DESCR, "i64", f"descr{i}"), str(descr)))
        conditions.append(("eq", "i32", _field(lines, obj, NDIM, "i32", f"nd{i}"), str(len(shape))))
        flags = _field(lines, obj, FLAGS, "i32", f"flags{i}")
        lines.append(f"  %contig{i} = and i32 {flags}, {C_CONTIGUOUS}")
        conditions.append(("ne", "i32", f"%contig{i}", "0"))
        data = _field(lines, obj, DATA, "i64", f"data{i}")
        if itemsize > 1:
            lines.append(f"  %misaligned{i} = and i64 {data}, {itemsize - 1}")
            conditions.append(("eq", "i64", f"%misaligned{i}", "0"))
    header_checks = len(conditions)
    for i, (written, other, written_size, other_size) in enumerate(overlaps):
        lines.append(f"  %wend{i} = add i64 %data{written}, {written_size}")
        lines.append(f"  %oend{i} = add i64 %data{other}, {other_size}")
        lines.append(f"  %after{i} = icmp uge i64 %data{written}, %oend{i}")
        lines.append(f"  %before{i} = icmp uge i64 %data{other}, %wend{i}")
        lines.append(f"  %apart{i} = or i1 %after{i}, %before{i}")
    # The checks and the call, on an array of `size` object pointers (a tuple's items, or
    # the argument vector of a METH_FASTCALL call); the two entries below call it.
    body = [f"define internal i32 @{symbol}_core(ptr %argv, i64 %size) {{", "entry:"]
    body.append(f"  %arity = icmp eq i64 %size, {count}")
    body.append("  br i1 %arity, label %items, label %bad")
    body.append("items:")
    for i in range(count):
        body.append(f"  %a{i}.p = getelementptr ptr, ptr %argv, i64 {i}")
        body.append(f"  %a{i} = load ptr, ptr %a{i}.p")
    # Only the type is read from any object; the array header only from numpy arrays, and
    # dimensions only from arrays of the right rank.
    body += type_lines
    body.append(f"  br i1 %types{count - 1}, label %header, label %bad")
    body.append("header:")
    body += lines
    ok = "true"
    for n, (predicate, ty, left, right) in enumerate(conditions[:header_checks]):
        body.append(f"  %c{n} = icmp {predicate} {ty} {left}, {right}")
        body.append(f"  %ok{n} = and i1 {ok}, %c{n}")
        ok = f"%ok{n}"
    for i in range(len(overlaps)):
        body.append(f"  %okov{i} = and i1 {ok}, %apart{i}")
        ok = f"%okov{i}"
    body.append(f"  br i1 {ok}, label %dims, label %bad")
    body.append("dims:")
    ok = "true"
    for i, (_, shape, _) in enumerate(buffers):
        if not shape:
            continue
        body.append(f"  %dims{i}.p = getelementptr i8, ptr %a{i}, i64 {DIMS}")
        body.append(f"  %dims{i} = load ptr, ptr %dims{i}.p")
        for axis, size in enumerate(shape):
            body.append(f"  %d{i}.{axis}.p = getelementptr i64, ptr %dims{i}, i64 {axis}")
            body.append(f"  %d{i}.{axis} = load i64, ptr %d{i}.{axis}.p")
            body.append(f"  %e{i}.{axis} = icmp eq i64 %d{i}.{axis}, {size}")
            body.append(f"  %okd{i}.{axis} = and i1 {ok}, %e{i}.{axis}")
            ok = f"%okd{i}.{axis}"
    body.append(f"  br i1 {ok}, label %call, label %bad")
    body.append("bad:")
    body.append("  ret i32 -1")
    body.append("call:")
    body.append(f"  %buffers = alloca [{max(1, count)} x i64], align 8")
    for i in range(count):
        body.append(f"  %slot{i} = getelementptr [{max(1, count)} x i64], ptr %buffers, i64 0, i64 {i}")
        body.append(f"  store i64 %data{i}, ptr %slot{i}")
    body.append("  %scalars = alloca [1 x i64], align 8")
    body.append("  %ctx = alloca [6 x i64], align 8")
    body.append("  call void @llvm.memset.p0.i64(ptr %ctx, i8 0, i64 48, i1 false)")
    body.append(f"  store i32 {abi.KERNEL_ABI_VERSION}, ptr %ctx")
    body.append("  %threads = getelementptr i8, ptr %ctx, i64 4")
    body.append(f"  store i32 {int(threads)}, ptr %threads")
    body.append(f"  %kernel = inttoptr i64 {kernel_address} to ptr")
    body.append("  %code = call i32 %kernel(ptr %buffers, ptr %scalars, ptr %ctx)")
    body.append("  ret i32 %code")
    body.append("}")
    return "\n".join(body + _tuple_entry(symbol) + (_fastcall_entry(symbol, fastcall) if fastcall else [])) + "\n"


def _tuple_entry(symbol: str) -> list[str]:
    # The arguments come as one tuple (a single py_object is the cheapest ctypes call).
    return [f"define i32 @{symbol}(ptr %args) {{", "entry:",
            f"  %size.p = getelementptr i8, ptr %args, i64 {TUPLE_SIZE}",
            "  %size = load i64, ptr %size.p",
            f"  %argv = getelementptr i8, ptr %args, i64 {TUPLE_ITEMS}",
            f"  %code = call i32 @{symbol}_core(ptr %argv, i64 %size)",
            "  ret i32 %code", "}"]


def _fastcall_entry(symbol: str, fastcall) -> list[str]:
    """`PyObject *entry(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)`, the METH_FASTCALL
    function of the kernel's builtin (`self`: a tuple whose item 0 is the checked path): None after a
    successful kernel call, else what the checked path returns (NULL with its exception set)."""
    api, release_gil = fastcall
    lines = [f"define ptr @{symbol}_fast(ptr %self, ptr %argv, i64 %nargs) {{", "entry:"]
    if release_gil:  # as ctypes does around a large kernel: other Python threads run meanwhile
        lines += [f"  %save.f = inttoptr i64 {api['PyEval_SaveThread']} to ptr", "  %state = call ptr %save.f()"]
    lines.append(f"  %code = call i32 @{symbol}_core(ptr %argv, i64 %nargs)")
    if release_gil:
        lines += [f"  %restore.f = inttoptr i64 {api['PyEval_RestoreThread']} to ptr",
                  "  call void %restore.f(ptr %state)"]
    lines += ["  %failed = icmp ne i32 %code, 0", "  br i1 %failed, label %fallback, label %done", "done:",
              f"  %none = inttoptr i64 {id(None)} to ptr",
              f"  %incref.f = inttoptr i64 {api['Py_IncRef']} to ptr",
              "  call void %incref.f(ptr %none)", "  ret ptr %none", "fallback:",
              f"  %checked.p = getelementptr i8, ptr %self, i64 {TUPLE_ITEMS}",
              "  %checked = load ptr, ptr %checked.p",
              f"  %call.f = inttoptr i64 {api['PyObject_Vectorcall']} to ptr",
              "  %result = call ptr %call.f(ptr %checked, ptr %argv, i64 %nargs, ptr null)",
              "  ret ptr %result", "}"]
    return lines


# A call on fewer bytes than this keeps the GIL: it takes about as long as releasing it would.
GIL_KEPT_BYTES = 1 << 18

MEMSET_DECLARATION = "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)\n"


def native_entry(kernel, sizes: dict[int, int], overlaps: list):
    """A ctypes function for the kernel's native entry, or None where there can be none."""
    if not LAYOUT_OK:
        return None
    address = library_entries(kernel.library).get(kernel.name, (0, 0))[0]
    if not address:
        return None
    # Small kernels keep the GIL (no release/re-acquire around a call of a few hundred ns);
    # larger ones release it like every other kernel call. The entry keeps no state, so both are safe.
    factory = ctypes.PYFUNCTYPE if _small(kernel, sizes) else ctypes.CFUNCTYPE
    return factory(ctypes.c_int32, ctypes.py_object)(address)


def _small(kernel, sizes: dict[int, int]) -> bool:
    return sum(sizes.values()) < GIL_KEPT_BYTES


class _MethodDef(ctypes.Structure):
    """CPython's PyMethodDef."""

    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


METH_FASTCALL = 0x80
_C_API = ("PyObject_Vectorcall", "Py_IncRef", "PyEval_SaveThread", "PyEval_RestoreThread")


def _c_api() -> dict[str, int] | None:
    """Addresses of the C API functions the METH_FASTCALL entries call, or None (no such entries)."""
    try:
        return {name: ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value for name in _C_API}
    except (AttributeError, ValueError):
        return None


C_API = _c_api()


def native_builtin(kernel, checked):
    """The kernel's METH_FASTCALL entry as a Python builtin function, or None.

    Called with the kernel's arguments it returns None, or `checked(*args)` when a check
    fails or the kernel returns an error code: one C-level call, with no Python frame and
    no ctypes conversion (the interpreter's kernel calls, vm/machine/decoder.py).
    """
    if not LAYOUT_OK or C_API is None:
        return None
    address = library_entries(kernel.library).get(kernel.name, (0, 0))[1]
    if not address:
        return None
    name = f"fast_call[{kernel.name}]".encode()
    method = _MethodDef(name, address, METH_FASTCALL, None)
    new_function = ctypes.pythonapi.PyCFunction_NewEx
    new_function.restype = ctypes.py_object
    new_function.argtypes = (ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)
    # `self` (item 0 read by the entry) keeps the method definition and its name alive with the function.
    return new_function(ctypes.addressof(method), (checked, method, name, kernel.library), None)


class _Plan:
    """What fast_call.py's eligibility and overlap rules read of a kernel, from its metadata alone."""

    def __init__(self, library, info):
        from .library import numpy_dtype

        self.library, self.info, self.name = library, info, info.name
        self._buffers = [(position, param, numpy_dtype(param.dtype), len(param.shape))
                         for position, param in enumerate(info.params) if param.kind == "buffer"]


def library_entries(library) -> dict[str, tuple[int, int]]:
    """Kernel name -> (tuple entry address, METH_FASTCALL entry address or 0), for every eligible kernel of `library`, compiled together once
    (one LLVM module: compiling entries one by one costs milliseconds each)."""
    entries = getattr(library, "_native_entries", None)
    if entries is None:
        entries = library._native_entries = _compile_entries(library)
    return entries


def _compile_entries(library) -> dict[str, tuple[int, int]]:
    from .fast_call import array_nbytes, buffers_overlap, eligible, static_threads

    texts, symbols = [], {}
    for info in library.kernel_object.kernels:
        plan = _Plan(library, info)
        if not plan._buffers or not eligible(plan):
            continue
        if any(dtype is not np.dtype(dtype.type) for _, _, dtype, _ in plan._buffers):
            continue
        kernel_address = library._engine.get_function_address(info.symbol)
        if not kernel_address:
            continue
        sizes = {index: array_nbytes(param.shape, dtype) for index, (_, param, dtype, _) in enumerate(plan._buffers)}
        buffers = [(id(dtype), tuple(param.shape), dtype.itemsize) for _, param, dtype, _ in plan._buffers]
        symbol = symbols[info.name] = f"relax_entry_{next(_counter)}"
        fastcall = (C_API, not _small(plan, sizes)) if C_API is not None else None
        texts.append(entry_ir(symbol, kernel_address, buffers, buffers_overlap(plan, sizes), static_threads(plan),
                              fastcall))
    if not texts:
        return {}
    try:
        module = llvm.parse_assembly("\n".join(texts) + MEMSET_DECLARATION)
        module.triple = host().triple
        module.verify()
        # An engine of its own at -O0: the entries are loads and compares, which optimization
        # does not improve, and code generation at -O0 is several times quicker.
        engine = library._entry_engine = llvm.create_mcjit_compiler(module, host_target_machine(0))
        engine.finalize_object()
        return {name: (engine.get_function_address(symbol),
                       engine.get_function_address(f"{symbol}_fast") if C_API is not None else 0)
                for name, symbol in symbols.items()}
    except Exception:  # noqa: BLE001 - no native entries: the Python fast path serves
        return {}
