"""One cuda kernel: bind the symbolic sizes, work out every launch, run them in order.

A kernel's metadata (KernelInfo) lists its parameters and, for cuda, its launches:
LaunchInfo(symbol, grid, block, shared_bytes) with grid and block as shape
expressions over the kernel's symbolic sizes. A call checks the arguments (device
arrays of the right dtype, rank and shape; scalars), binds every symbolic size from
the shapes (and integer scalar parameters by name), evaluates each launch's grid and block, and launches each `__global__`
with the arguments typed as the CUDA C signature declares them (cuda_spec): buffer
pointers in parameter order, scalars in their own C type, then one int64 per
symbolic size, and last the kernel's workspace (a device buffer of
KernelInfo.workspace_bytes, kept by the kernel between calls) when it has one. A
launch with a zero grid or block dimension (an empty tensor) is skipped: CUDA
refuses such launches and there is nothing to compute.

`plan_launches` is the pure part (no cupy, no GPU), so it is tested on any machine.
"""

from __future__ import annotations

import numpy as np

from ..errors import VMError
from ..kernels.metadata import evaluate, format_expr
from .tensors import is_device_array

# The numpy type that cupy passes with the C type of a scalar parameter.
SCALAR_TYPES = {
    "bool": np.int8, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
}
ARRAY_TYPES = dict(SCALAR_TYPES, bool=np.bool_)
STATIC_SHARED_LIMIT = 48 * 1024  # dynamic shared memory a launch gets without asking


class CudaKernelError(VMError):
    """A cuda kernel was called with wrong arguments or its launch failed."""


def _fail(info, message: str) -> CudaKernelError:
    return CudaKernelError(f"kernel '{info.name}': {message}")


def bind_sizes(info, args) -> dict[str, int]:
    """The symbolic sizes bound from the buffers' shapes, every buffer's shape checked."""
    if len(args) != len(info.params):
        raise _fail(info, f"takes {len(info.params)} arguments "
                          f"({', '.join(p.name for p in info.params)}), got {len(args)}")
    values: dict[str, int] = {}
    buffers = [(param, value) for param, value in zip(info.params, args) if param.kind == "buffer"]
    for param, value in buffers:
        _check_buffer(info, param, value)
        for axis, dim in enumerate(param.shape):
            if isinstance(dim, str) and dim not in values:
                values[dim] = int(value.shape[axis])
    for param, value in buffers:
        _check_dims(info, param, value, values)
    for name in info.symbolic_vars:
        if name not in values:
            raise _fail(info, f"symbolic size '{name}' is not bound by any buffer's shape")
    return values


def _check_buffer(info, param, value) -> None:
    """A buffer argument is a C-contiguous tensor of the parameter's dtype and rank."""
    if not hasattr(value, "shape") or not hasattr(value, "dtype"):
        raise _fail(info, f"parameter '{param.name}' expects a {param.dtype} tensor, got {type(value).__name__}")
    expected = ARRAY_TYPES.get(param.dtype)
    if expected is None or value.dtype != np.dtype(expected):
        raise _fail(info, f"parameter '{param.name}' expects dtype {param.dtype}, got {value.dtype}")
    if len(value.shape) != len(param.shape):
        raise _fail(info, f"parameter '{param.name}' expects {len(param.shape)} dimensions "
                          f"{tuple(format_expr(d) for d in param.shape)}, got shape {tuple(value.shape)}")
    if not value.flags.c_contiguous:
        raise _fail(info, f"parameter '{param.name}' must be a C-contiguous (compact row-major) array")


def _check_dims(info, param, value, values: dict[str, int]) -> None:
    """Every dimension of a buffer equals its parameter's extent under the bound sizes."""
    for axis, dim in enumerate(param.shape):
        try:
            expected = evaluate(dim, values)
        except KeyError as exc:
            raise _fail(info, f"cannot bind symbolic size {exc} from the shape of '{param.name}'") from None
        if expected != value.shape[axis]:
            wanted = str(dim) if isinstance(dim, int) else f"{format_expr(dim)} = {expected}"
            raise _fail(info, f"parameter '{param.name}' dimension {axis} must be {wanted}, "
                              f"got shape {tuple(value.shape)}")


def typed_arguments(info, args, values: dict[str, int]) -> tuple:
    """The launch arguments: buffers as given, scalars in their C type, then the sizes as int64."""
    buffers, scalars = [], []
    for param, value in zip(info.params, args):
        if param.kind == "buffer":
            buffers.append(value)
            continue
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        scalar_type = SCALAR_TYPES.get(param.dtype)
        if scalar_type is None:
            raise _fail(info, f"parameter '{param.name}' has dtype {param.dtype}, which no launch can pass")
        is_float = param.dtype.startswith("float")
        accepted = (int, float, np.integer, np.floating) if is_float else (int, np.integer, bool, np.bool_)
        if not isinstance(value, accepted) or (is_float and isinstance(value, (bool, np.bool_))):
            raise _fail(info, f"parameter '{param.name}' expects a {param.dtype} scalar, got {value!r}")
        scalars.append(scalar_type(value))
    sizes = [np.int64(values[name]) for name in info.symbolic_vars]
    return tuple(buffers + scalars + sizes)


def uses_workspace(info) -> bool:
    """Whether the kernel's launches take a workspace pointer last (KernelInfo.workspace_bytes
    is not the constant 0: top-level allocations of symbolic size, see codegen/cuda/kernel.py)."""
    size = getattr(info, "workspace_bytes", 0)
    return not (isinstance(size, int) and size == 0)


def plan_launches(info, args) -> list[tuple[str, tuple, tuple, int, tuple]]:
    """(symbol, grid, block, shared bytes, arguments) for each launch to run, in order."""
    return bind_launches(info, args)[0]


def bind_launches(info, args) -> tuple[list, int | None]:
    """The launches to run and the workspace bytes they need (None: no workspace parameter)."""
    launches = tuple(getattr(info, "launches", None) or ())
    if not launches:
        raise _fail(info, "has no launch dimensions in its metadata (not a cuda kernel?)")
    values = bind_sizes(info, args)
    arguments = typed_arguments(info, args, values)
    # Launch dimensions may also use integer scalar parameters (by name).
    for param, value in zip(info.params, args):
        if param.kind == "scalar" and not param.dtype.startswith("float") and param.name not in values:
            values[param.name] = int(value[()] if isinstance(value, np.ndarray) else value)
    plan = []
    for launch in launches:
        try:
            grid = tuple(int(evaluate(d, values)) for d in launch.grid)
            block = tuple(int(evaluate(d, values)) for d in launch.block)
            shared = int(evaluate(launch.shared_bytes, values))
        except (KeyError, ZeroDivisionError) as exc:
            raise _fail(info, f"cannot compute the launch of '{launch.symbol}': {exc}") from None
        if any(d < 0 for d in grid + block):
            raise _fail(info, f"launch '{launch.symbol}' has a negative dimension: grid {grid}, block {block}")
        if 0 in grid or 0 in block:
            continue
        plan.append((launch.symbol, grid, block, shared, arguments))
    workspace = None
    if uses_workspace(info):
        try:
            workspace = int(evaluate(info.workspace_bytes, values))
        except (KeyError, ZeroDivisionError) as exc:
            raise _fail(info, f"cannot compute its workspace size: {exc}") from None
    return plan, workspace


PLAN_CACHE_SIZE = 16  # argument layouts whose launch plan a kernel remembers


class CudaKernel:
    """A callable kernel: device arrays and numbers in parameter order, outputs passed in.

    A kernel whose parameters are all buffers (most are) remembers its launch plan per
    argument layout (each argument's type, shape, strides and dtype): the same layout
    gives the same launches, so a repeated call skips the checks and the evaluation of
    every launch dimension, which cost more host time than the launch itself."""

    def __init__(self, info, functions: dict, allocate=None):
        self.info = info
        self.name = info.name
        self._functions = functions  # symbol -> cupy Function
        self._allocate = allocate  # nbytes -> a device uint8 array, for the workspace
        self._workspace = None  # kept between calls (launches run in stream order), grown as needed
        self._buffers_only = all(param.kind == "buffer" for param in info.params)
        self._plans: dict = {}  # argument layout -> (launches, size arguments, workspace bytes)

    def _allow_shared(self, symbol: str, nbytes: int) -> None:
        """More than 48 KiB of dynamic shared memory must be allowed per function first."""
        function = self._functions[symbol]
        if getattr(function, "max_dynamic_shared_size_bytes", 0) < nbytes:
            function.max_dynamic_shared_size_bytes = nbytes

    def _workspace_for(self, nbytes: int):
        if self._workspace is None or self._workspace.nbytes < nbytes:
            self._workspace = self._allocate(max(nbytes, 256))
        return self._workspace

    def _layout(self, args):
        """The key of the launch plan for `args`; None when the plan cannot be reused."""
        if not self._buffers_only:
            return None
        try:
            return tuple((type(value), value.shape, value.strides, value.dtype) for value in args)
        except AttributeError:  # not an array: the checks of a fresh plan name it
            return None

    def _checked_plan(self, args) -> tuple[list, int | None]:
        """bind_launches of `args` after refusing host arrays: every argument checked."""
        for param, value in zip(self.info.params, args):
            if param.kind == "buffer" and not is_device_array(value):
                raise _fail(self.info, f"parameter '{param.name}' expects a tensor on the GPU, "
                                       f"got {type(value).__name__} (the VM copies inputs to the device)")
        return bind_launches(self.info, args)

    def __call__(self, *args):
        key = self._layout(args)
        cached = self._plans.get(key) if key is not None else None
        if cached is not None:
            launches, sizes, workspace_bytes = cached
            arguments = args + sizes
        else:
            plan, workspace_bytes = self._checked_plan(args)
            launches = [launch[:4] for launch in plan]
            arguments = plan[0][4] if plan else ()
            if key is not None:  # buffers only: the arguments are `args`, then the sizes
                if len(self._plans) >= PLAN_CACHE_SIZE:
                    self._plans.clear()
                self._plans[key] = (launches, arguments[len(args):], workspace_bytes)
        if not launches:
            return
        if workspace_bytes is not None:
            arguments += (self._workspace_for(workspace_bytes),)
        for symbol, grid, block, shared in launches:
            try:
                if shared > STATIC_SHARED_LIMIT:
                    self._allow_shared(symbol, shared)
                self._functions[symbol](grid, block, arguments, shared_mem=shared)
            except Exception as error:  # noqa: BLE001 - a driver error names the launch
                raise _fail(self.info, f"launch of '{symbol}' (grid {grid}, block {block}) failed: "
                                       f"{type(error).__name__}: {error}") from None
