"""The one C calling convention of every CPU kernel (kernel ABI version 1).

Every kernel symbol has the C type

    int32_t kernel(void **buffers, int64_t *scalars, relax_kernel_ctx *ctx);

`buffers` holds the data pointers of the buffer parameters in parameter order;
`scalars` holds, as 64-bit words, first the scalar parameters in parameter order
(integers and bools sign-extended, floats as the bits of a double), then the
values of the symbolic size variables in the order the metadata lists them. The
context carries the thread budget and the workspace in, and an error message out.
A kernel returns 0 on success and one of the RETURN_CODES otherwise.
docs/kernel-abi.md is the prose version of this module; both derive from here.
"""

from __future__ import annotations

import ctypes

# Bumped whenever the signature, the order of arguments or the context layout
# changes. A loader refuses kernels built for a newer ABI.
KERNEL_ABI_VERSION = 1

# Prefix of every kernel's native symbol: `relaxk_<kernel name>`. It keeps a
# kernel called `exp` or `sin` from clashing with the C library.
SYMBOL_PREFIX = "relaxk_"

# Parallel loops never use more threads than this, whatever the context says.
MAX_THREADS = 64

# Workspace allocations are carved out of ctx->workspace at this alignment.
WORKSPACE_ALIGNMENT = 64


class KernelContext(ctypes.Structure):
    """relax_kernel_ctx: 48 bytes, every field naturally aligned."""

    _fields_ = [
        ("abi_version", ctypes.c_int32),      # offset 0: KERNEL_ABI_VERSION of the caller
        ("num_threads", ctypes.c_int32),      # offset 4: threads a parallel loop may use (>= 1)
        ("workspace", ctypes.c_void_p),       # offset 8: caller-owned scratch memory, 64-byte aligned
        ("workspace_size", ctypes.c_int64),   # offset 16: its size in bytes
        ("error_message", ctypes.c_char_p),   # offset 24: out: a static NUL-terminated message
        ("error_code", ctypes.c_int32),       # offset 32: out: the code returned, for convenience
        ("reserved", ctypes.c_int32),         # offset 36: zero
        ("return_value", ctypes.c_int64),     # offset 40: out: a scalar result (T.ret), as a 64-bit word
    ]


# Field order of the context as the code generator sees it: (name, LLVM type).
CONTEXT_LAYOUT = (
    ("abi_version", "i32"),
    ("num_threads", "i32"),
    ("workspace", "ptr"),
    ("workspace_size", "i64"),
    ("error_message", "ptr"),
    ("error_code", "i32"),
    ("reserved", "i32"),
    ("return_value", "i64"),
)

CONTEXT_FIELD = {name: index for index, (name, _) in enumerate(CONTEXT_LAYOUT)}

# Non-zero return values of a kernel and what they mean.
RETURN_CODES = {
    1: "assertion failed",
    2: "workspace too small",
    3: "unsupported ABI version in the context",
    4: "out of memory",
    5: "index out of range",
}
SUCCESS = 0
ASSERTION_FAILED = 1
WORKSPACE_TOO_SMALL = 2
BAD_CONTEXT = 3
OUT_OF_MEMORY = 4
# A tir.checked_index failed: ctx->return_value holds the index and ctx->error_message
# reads "index {index} out of range [-n, n) in R.<op>" ({index} is filled in
# by the loader). Additive: an older loader reports "error code 5" with the message.
INDEX_OUT_OF_RANGE = 5
INDEX_PLACEHOLDER = "{index}"

KERNEL_CFUNCTYPE = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(KernelContext)
)


def kernel_symbol(name: str) -> str:
    return SYMBOL_PREFIX + name
