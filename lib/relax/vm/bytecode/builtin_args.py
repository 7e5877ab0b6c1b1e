"""Argument kinds of the shape-protocol builtins, checked by the verifier before anything runs.

vm_shape_lower (as TVM's VMShapeLower) calls a few builtins with integer-coded argument
lists: `match_shape(value, heap, n, code0, operand0, ..., err_ctx)`, `make_shape(heap,
n, code0, operand0, ...)`, `check_tensor_info(value, ndim, dtype, err_ctx)`, ... Their
counts and codes are integers the code generator writes as immediates (or as integer
constants when too wide for an immediate). A file whose argument words were changed
(an immediate turned into a constant-pool string, a count larger than the argument
list) would otherwise reach the builtins and the compiled-mode planner, which index and
add with those values; here such a call is refused with its position in the function.
"""

from __future__ import annotations

from .binary import FormatError
from .isa import ArgKind, Instruction, decode_arg

MAX_SHAPE_HEAP = 1 << 20  # one int64 slot per symbolic variable; a bigger heap is a corrupt file

# name -> (fixed slots, optional trailing slots): "int" slots must hold an integer known
# before the call (an immediate or an integer constant); "any" slots take any argument.
_FIXED = {
    "vm.builtin.check_tensor_info": (("any", "int"), 2),   # dtype, err_ctx
    "vm.builtin.check_shape_info": (("any", "int"), 1),    # err_ctx
    "vm.builtin.check_tuple_info": (("any", "int"), 1),    # err_ctx
    "vm.builtin.match_prim_value": (("any", "any", "int", "int"), 1),  # err_ctx
    "vm.builtin.make_prim_value": (("any", "int", "int"), 0),
    "vm.builtin.alloc_shape_heap": (("any", "int"), 0),
}


class BuiltinArgumentError(FormatError):
    """A protocol builtin called with arguments of the wrong kind or number."""


def check_builtin_call(exe, name: str, instr: Instruction) -> None:
    """Refuses a call of a shape-protocol builtin whose arguments break its protocol."""
    if name in ("vm.builtin.match_shape", "vm.builtin.make_shape"):
        _check_shape_codes(exe, name, instr.args)
        return
    layout = _FIXED.get(name)
    if layout is None:
        return
    fixed, optional = layout
    if not len(fixed) <= len(instr.args) <= len(fixed) + optional:
        expected = f"{len(fixed)}" if not optional else f"{len(fixed)} to {len(fixed) + optional}"
        raise BuiltinArgumentError(f"{name} takes {expected} arguments, got {len(instr.args)}")
    for position, slot in enumerate(fixed):
        if slot == "int":
            _integer(exe, name, instr.args, position)
    if name == "vm.builtin.alloc_shape_heap":
        size = _integer(exe, name, instr.args, 1)
        if not 0 <= size <= MAX_SHAPE_HEAP:
            raise BuiltinArgumentError(f"{name}: bad shape heap size {size} (0 to {MAX_SHAPE_HEAP})")
    if name == "vm.builtin.check_tensor_info" and len(instr.args) == 4:
        _dtype(exe, name, instr.args, 2)


def _check_shape_codes(exe, name: str, args) -> None:
    """match_shape(value, heap, n, 2n codes and operands[, err_ctx]); make_shape(heap, n, 2n ...)."""
    first = 2 if name == "vm.builtin.match_shape" else 1
    if len(args) <= first:
        raise BuiltinArgumentError(f"{name} takes at least {first + 1} arguments, got {len(args)}")
    size = _integer(exe, name, args, first)
    trailing = 1 if name == "vm.builtin.match_shape" else 0
    expected = first + 1 + 2 * size
    if size < 0 or not expected <= len(args) <= expected + trailing:
        raise BuiltinArgumentError(f"{name} for {size} dimensions has {len(args)} arguments")
    for position in range(first + 1, expected):
        _integer(exe, name, args, position)


def _integer(exe, name: str, args, position: int) -> int:
    kind, value = decode_arg(args[position])
    if kind == ArgKind.IMMEDIATE:
        return value
    if kind == ArgKind.CONST_INDEX and 0 <= value < len(exe.constants):
        constant = exe.constants[value]
        if isinstance(constant, int) and not isinstance(constant, bool):
            return constant
    raise BuiltinArgumentError(f"{name}: argument {position} must be an integer, not {_describe(exe, kind, value)}")


def _dtype(exe, name: str, args, position: int) -> None:
    from ...runtime.dtype import DataType

    kind, value = decode_arg(args[position])
    if kind == ArgKind.CONST_INDEX and 0 <= value < len(exe.constants) and isinstance(exe.constants[value], DataType):
        return
    raise BuiltinArgumentError(f"{name}: argument {position} must be a dtype constant, not {_describe(exe, kind, value)}")


def _describe(exe, kind: int, value: int) -> str:
    if kind == ArgKind.CONST_INDEX and 0 <= value < len(exe.constants):
        return f"c[{value}] (a {type(exe.constants[value]).__name__} constant)"
    names = {ArgKind.REGISTER: "a register", ArgKind.FUNC_INDEX: "a function index"}
    return names.get(kind, f"an argument of kind {kind}")
