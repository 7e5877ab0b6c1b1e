"""Entry checks with constant arguments, decided once per VM: the common case in a few operations.

`vm.builtin.check_tensor_info(x, ndim, dtype, err_ctx)` and `vm.builtin.match_shape(x,
heap, n, 0, d0, 0, d1, ..., err_ctx)` (every axis asserted equal to an immediate, as
static shapes give) run on every call of a function. A check site answers "exactly a
numpy array of this rank, dtype object and shape" with one expression and otherwise
calls the builtin itself, which accepts what it accepts and reports what it reports:
results and messages are the builtin's.
"""

from __future__ import annotations

import numpy as np

from .builtins import ASSERT_EQUAL_TO_IMM, check_tensor_info, match_shape
from .static_memory import VM_ARGUMENT, static_values


def tensor_info_check(values: list):
    """check_tensor_info(<register>, ndim, dtype, err_ctx) with constant ndim and dtype, or None."""
    if len(values) != 4 or values[0] is not None or not isinstance(values[1], int):
        return None
    ndim, dtype = values[1], values[2]
    try:
        expected = np.dtype(dtype.numpy.type)
    except Exception:  # noqa: BLE001 - no numpy dtype (or not a DataType): the builtin decides
        return None
    rest = tuple(values[2:])

    def check(value):
        if value.__class__ is not np.ndarray or value.dtype is not expected or (ndim != -1 and value.ndim != ndim):
            check_tensor_info(value, ndim, *rest)

    return check


def static_shape_check(values: list):
    """match_shape(<register>, heap, n, 0, d0, ..., err_ctx) asserting constants only, or None."""
    if len(values) < 3 or values[0] is not None or not isinstance(values[2], int):
        return None
    size, codes = values[2], values[3:]
    if len(codes) < 2 * size or any(codes[2 * axis] != ASSERT_EQUAL_TO_IMM for axis in range(size)):
        return None
    if any(v is VM_ARGUMENT for v in values[1:]):
        return None
    shape = tuple(codes[2 * axis + 1] for axis in range(size))
    if not all(isinstance(d, int) for d in shape):
        return None
    heap, rest = values[1], tuple(codes)

    def check(value):
        if value.__class__ is not np.ndarray or value.shape != shape:
            match_shape(value, heap, size, *rest)

    return check


CHECKS = {"vm.builtin.check_tensor_info": tensor_info_check, "vm.builtin.match_shape": static_shape_check}


def install_checks(exe, bytecode: list, constants: list) -> None:
    """Replaces entry checks with constant arguments in decoded code by check sites."""
    from .decoder import CALL, CALL1
    from ..bytecode.isa import Opcode, decode_arg

    for function in bytecode:
        if function is None:
            continue
        for position, instr in enumerate(exe.instructions(exe.func_table[function.index])):
            decoded = function.code[position]
            if instr.opcode != Opcode.CALL or decoded[0] != CALL:
                continue
            make = CHECKS.get(exe.func_table[instr.field("func_index")].name)
            if make is None:
                continue
            values = _values_with_heap(exe, instr, constants)
            check = make(values) if values is not None else None
            if check is not None:
                function.code[position] = (CALL1, check, decode_arg(instr.args[0])[1], decoded[3])


def _values_with_heap(exe, instr, constants: list):
    """static_values, where match_shape's heap may be a register (it holds null with static shapes):
    the sites only assert immediates, so they never read the heap, and the builtin then gets None."""
    return static_values(exe, instr, constants, register_positions=(0, 1))
