"""Destination-passing calls from Python: `self.call_tir` and `self.call_dps_packed`.

Both allocate the outputs that `out_sinfo` describes (one R.Tensor, or a list of
them), call the function with the inputs followed by the outputs, and return the
outputs (one array, or a tuple for a list). Sizes in `out_sinfo` are ints or names of
symbolic sizes; for call_tir a name is bound from the shapes of the arguments through
the PrimFunc's buffers, as the VM's call_tir binds it:

    n = T.int64(); A: (n, 16), B: (16, 20), C: (n, 20)
    self.call_tir(self.matmul, [x, w], out_sinfo=R.Tensor(("n", 20), "float32"))   # n = x.shape[0]

Mismatches (a wrong rank, a fixed size that differs, an output that is not what the
kernel writes) are UserErrors naming the function and the argument, before the kernel runs.
"""

from __future__ import annotations

import numpy as np

from .. import ir
from ..diagnostics import UserError
from ..ir import tir
from ..runtime.dtype import DataType


def output_infos(out_sinfo, what: str) -> tuple[list[ir.TensorStructInfo], bool]:
    """The outputs' struct info, and whether they come back as a tuple (a list was given)."""
    many = isinstance(out_sinfo, (list, tuple))
    infos = list(out_sinfo) if many else [out_sinfo]
    for info in infos:
        if not isinstance(info, ir.TensorStructInfo) or info.shape_values is None:
            raise UserError(f"{what}: out_sinfo must be R.Tensor(shape, dtype) or a list of them, "
                            f"got {info!r}")
    return infos, many


def allocate(infos: list[ir.TensorStructInfo], sizes: dict[str, int], what: str) -> list[np.ndarray]:
    """Zeroed numpy arrays for `infos`, symbolic sizes read from `sizes`."""
    outputs = []
    for index, info in enumerate(infos):
        shape = tuple(_size(dim, sizes, f"{what}: output {index}") for dim in info.shape_values)
        outputs.append(np.zeros(shape, dtype=DataType.parse(info.dtype).numpy))
    return outputs


# Size arithmetic as TIR means it (floor division and modulo), for sizes such as `n * 4`.
_SIZE_OPERATORS = {
    tir.Add: lambda a, b: a + b, tir.Sub: lambda a, b: a - b, tir.Mul: lambda a, b: a * b,
    tir.FloorDiv: lambda a, b: a // b, tir.FloorMod: lambda a, b: a % b, tir.Min: min, tir.Max: max,
}


def _size(dim, sizes: dict[str, int], what: str) -> int:
    if isinstance(dim, tir.IntImm):
        return dim.value
    if isinstance(dim, tir.Var):
        if dim.name not in sizes:
            known = ", ".join(f"{name}={value}" for name, value in sizes.items()) or "none"
            raise UserError(f"{what}: the size '{dim.name}' is not bound by the arguments (bound: {known}); "
                            "give its value, such as x.shape[0]")
        return sizes[dim.name]
    operator = _SIZE_OPERATORS.get(type(dim))
    if operator is not None:
        a, b = _size(dim.a, sizes, what), _size(dim.b, sizes, what)
        if b == 0 and isinstance(dim, (tir.FloorDiv, tir.FloorMod)):
            raise UserError(f"{what}: a size divides by zero")
        return operator(a, b)
    raise UserError(f"{what}: a size must be an int, a symbolic name or arithmetic on them, got {dim!r}")


def bind_sizes(prim_func: tir.PrimFunc, arrays: list, what: str, scalars: tuple = (), outputs: int = 0
               ) -> dict[str, int]:
    """The symbolic sizes of `prim_func`'s buffers, read from the input `arrays` and from the
    `scalars` passed after the `outputs` (tir_vars); checks each input's rank, dtype and fixed sizes."""
    sizes: dict[str, int] = {}
    for param, value in zip(prim_func.params[len(arrays) + outputs:], scalars):
        sizes[param.name] = value
    for index, (param, array) in enumerate(zip(prim_func.params, arrays)):
        buffer = prim_func.buffer_of(param)
        if buffer is None:
            continue  # a scalar parameter: passed through as it is
        if not isinstance(array, np.ndarray):
            raise UserError(f"{what}: argument {index} ('{buffer.name}') must be an array, got {type(array).__name__}")
        _match(buffer, array.shape, sizes, f"{what}: argument {index} ('{buffer.name}')")
        if str(DataType.from_numpy(array.dtype)) != buffer.dtype:
            raise UserError(f"{what}: argument {index} ('{buffer.name}') has dtype {array.dtype}, "
                            f"the kernel expects {buffer.dtype}")
    return sizes


def check_outputs(prim_func: tir.PrimFunc, infos: list, outputs: list, sizes: dict[str, int], what: str,
                  first: int) -> None:
    """Each output matches the buffer the kernel writes it through (the parameters after
    the `first` inputs), with the symbolic sizes the inputs bound."""
    sizes = dict(sizes)
    for index, (param, output, info) in enumerate(zip(prim_func.params[first:], outputs, infos)):
        buffer = prim_func.buffer_of(param)
        if buffer is None:
            raise UserError(f"{what}: parameter '{param.name}' of the kernel is a scalar, not an output")
        _match(buffer, output.shape, sizes, f"{what}: out_sinfo of output {index} ('{buffer.name}')")
        if info.dtype != buffer.dtype:
            raise UserError(f"{what}: out_sinfo of output {index} has dtype {info.dtype}, "
                            f"the kernel writes {buffer.dtype}")


def check_arity(prim_func: tir.PrimFunc, inputs: int, outputs: int, name: str, what: str, scalars: int = 0) -> None:
    if len(prim_func.params) != inputs + outputs + scalars:
        extra = f" and {scalars} tir_vars" if scalars else ""
        raise UserError(f"{what}: '{name}' takes {len(prim_func.params)} parameters; "
                        f"got {inputs} inputs and {outputs} output(s) from out_sinfo{extra}")


def _match(buffer, shape: tuple, sizes: dict[str, int], what: str) -> None:
    """`shape` against the buffer's: fixed sizes equal, a symbolic size the same everywhere."""
    expected = "(" + ", ".join(_dim_text(dim) for dim in buffer.shape) + ")"
    if len(shape) != len(buffer.shape):
        raise UserError(f"{what} has shape {tuple(shape)}; the kernel expects {expected}")
    for dim, actual in zip(buffer.shape, shape):
        if isinstance(dim, tir.IntImm) and dim.value != actual:
            raise UserError(f"{what} has shape {tuple(shape)}; the kernel expects {expected}")
        if isinstance(dim, tir.Var):
            bound = sizes.setdefault(dim.name, int(actual))
            if bound != actual:
                raise UserError(f"{what} has shape {tuple(shape)}; the kernel expects {expected} "
                                f"with {dim.name}={bound}")


def _dim_text(dim) -> str:
    if isinstance(dim, tir.IntImm):
        return str(dim.value)
    return dim.name if isinstance(dim, tir.Var) else "?"
