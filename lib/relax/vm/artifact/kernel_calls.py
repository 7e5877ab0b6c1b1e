"""Kernel call sites checked against the kernels they bind to: in relaxld, and again when a .vmx loads.

    problems = check_kernel_calls(exe, "model.vmo", [("k.ko", kernel_object), ...])

A kernel is a packed function of the bytecode that a kernel object defines; the VM
calls it with the call's arguments in parameter order (docs/kernel-abi.md). Each call
site is compared with the metadata (KernelInfo) of every kernel object that defines
the name, as far as the bytecode tells what the arguments are:

- the number of arguments, always;
- an immediate, an int, float or bool constant is a scalar (with its value); a tensor
  constant a buffer of its dtype and shape; a string, shape, dtype, tuple or null
  constant neither;
- a register holds what its definition made when that is a parameter of the function
  (its signature record: a tensor's dtype, rank and static dimensions),
  vm.builtin.alloc_tensor (a dtype constant, and a shape constant or make_shape with
  its rank and immediate dimensions), vm.builtin.reshape, vm.builtin.alloc_shape_heap
  (int64, rank 1), vm.builtin.make_prim_value (an integer) or vm.builtin.null_value.
  What is known flows in instruction order and is forgotten at a jump target, except
  for registers defined once in the function; anything else is unknown.

A buffer parameter refuses a scalar or another value that is not a tensor, a tensor of
another dtype or rank, and a static dimension that differs from the kernel's (its size
variables bound as the kernel loader binds them: integer scalars first, then buffers
in order). A scalar parameter refuses a tensor of rank above 0, a float for an integer
parameter and a bool for a float one. Each refusal is one the kernel loader would make
when the call runs. Not checked: what the bytecode does not know (results of other
calls, tuple fields, parameters without a signature record or that are not tensors, sizes
kept in the shape heap), kernels passed as values rather than called, and compiled-TIR
(vm_tir_func) entries, which the code generator does not emit.
"""

from __future__ import annotations

import numpy as np

from ...diagnostics import UserError
from ...records import record
from ...runtime.dtype import DataType
from ...runtime.kernels.metadata import KernelInfo, evaluate, format_expr
from ...runtime.objects import ShapeTuple
from ..bytecode.isa import VM_REGISTER, ArgKind, FuncKind, Opcode, decode_arg, is_special_register
from ..bytecode.signature import function_signatures

USE_IMM = 0  # make_shape / make_prim_value operand code: an immediate (vm/machine/builtins.py)


@record
class Value:
    """What the bytecode knows of a value: a tensor ("buffer"), a number ("scalar"), or another kind."""

    kind: str                 # "buffer", "scalar", or what it is otherwise ("str", "shape", "null", ...)
    dtype: str | None = None  # a buffer's dtype; a scalar's "int", "float" or "bool"
    shape: tuple | None = None  # a buffer's or shape's dims (int or None); None when the rank is unknown
    number: object = None     # a scalar's value, when known

    def __str__(self) -> str:
        if self.kind == "buffer":
            dims = "..." if self.shape is None else ", ".join("?" if d is None else str(d) for d in self.shape)
            return f"{self.dtype or '?'}[{dims}]"
        if self.kind == "scalar":
            return self.dtype if self.number is None else f"{self.dtype} {self.number}"
        return self.kind


def _constant(value) -> Value | None:
    if isinstance(value, np.ndarray):
        try:
            dtype = str(DataType.from_numpy(value.dtype))
        except Exception:  # a dtype relax has no name for: unknown
            dtype = None
        return Value("buffer", dtype, tuple(int(d) for d in value.shape))
    if isinstance(value, ShapeTuple):
        return Value("shape", shape=tuple(int(d) for d in value))
    if isinstance(value, (bool, np.bool_)):
        return Value("scalar", "bool", number=bool(value))
    if isinstance(value, (int, np.integer)):
        return Value("scalar", "int", number=int(value))
    if isinstance(value, (float, np.floating)):
        return Value("scalar", "float", number=float(value))
    if isinstance(value, DataType):
        return Value("dtype", str(value))
    if isinstance(value, str):
        return Value("str")
    if isinstance(value, tuple):
        return Value("tuple")
    return Value("null") if value is None else None


def _param(info: dict) -> Value | None:
    """A function parameter from its signature record's struct info (tensors only)."""
    if not isinstance(info, dict) or info.get("kind") != "tensor":
        return None
    dtype = info.get("dtype")
    dtype = dtype if isinstance(dtype, str) and dtype != "void" else None
    shape = info.get("shape")
    if isinstance(shape, list):
        dims = tuple(d if isinstance(d, int) and not isinstance(d, bool) else None for d in shape)
    else:
        ndim = info.get("ndim", -1)
        dims = (None,) * ndim if isinstance(ndim, int) and ndim >= 0 else None
    return Value("buffer", dtype, dims)


def _immediates(args: list) -> list | None:
    """The values of argument words that are all immediates; None otherwise."""
    values = [value for kind, value in args]
    return values if all(kind == ArgKind.IMMEDIATE for kind, _ in args) else None


def _made_shape(args: list) -> Value | None:
    """vm.builtin.make_shape(heap, ndim, code, operand, ...): its rank and immediate dims."""
    codes = _immediates(args[1:])
    if not codes or len(codes) != 1 + 2 * codes[0]:
        return None
    return Value("shape", shape=tuple(operand if code == USE_IMM else None
                                      for code, operand in zip(codes[1::2], codes[2::2])))


def _result(name: str, args: list, values: list) -> Value | None:
    """What a call of builtin `name` returns, as far as its arguments tell."""
    if name == "vm.builtin.alloc_tensor" and len(values) >= 4:
        dtype, shape = values[3], values[2]
        return Value("buffer", dtype.dtype if dtype is not None and dtype.kind == "dtype" else None,
                     shape.shape if shape is not None and shape.kind == "shape" else None)
    if name == "vm.builtin.reshape" and len(values) == 2:
        tensor, shape = values
        return Value("buffer", tensor.dtype if tensor is not None and tensor.kind == "buffer" else None,
                     shape.shape if shape is not None and shape.kind == "shape" else None)
    if name == "vm.builtin.make_shape" and args:
        return _made_shape(args)
    if name == "vm.builtin.alloc_shape_heap":
        return Value("buffer", "int64", (None,))
    if name == "vm.builtin.make_prim_value" and len(args) == 3:
        codes = _immediates(args[1:])
        return Value("scalar", "int", number=codes[1] if codes and codes[0] == USE_IMM else None)
    if name == "vm.builtin.null_value" and not args:
        return Value("null")
    return None


def _jump_targets(instructions) -> set[int]:
    targets = set()
    for pc, instruction in enumerate(instructions):
        if instruction.opcode == Opcode.GOTO:
            targets.add(pc + instruction.field("pc_offset"))
        elif instruction.opcode == Opcode.IF:
            targets.add(pc + instruction.field("false_offset"))
    return targets


def _call_sites(exe, func, record: dict | None, kernels: set):
    """(pc, kernel name, argument Values (None: unknown)) of each kernel call in bytecode function `func`."""
    instructions = exe.instructions(func)
    params = record.get("params", []) if record else []
    state = {index: _param(param.get("info")) for index, param in enumerate(params[:func.num_args])
             if isinstance(param, dict)}
    definitions: dict[int, int] = {}
    for instruction in instructions:
        if instruction.opcode == Opcode.CALL:
            definitions[instruction.field("dst")] = definitions.get(instruction.field("dst"), 0) + 1
    # A register defined once (a parameter never redefined) holds the same thing wherever it is read.
    stable = {register: value for register, value in state.items() if register not in definitions}
    targets = _jump_targets(instructions)
    for pc, instruction in enumerate(instructions):
        if pc in targets:
            state = {}
        if instruction.opcode != Opcode.CALL:
            if instruction.opcode in (Opcode.GOTO, Opcode.RET):
                state = {}
            continue
        args = [decode_arg(word) for word in instruction.args]
        values = [_argument(exe, kind, value, state, stable) for kind, value in args]
        callee = exe.func_table[instruction.field("func_index")]
        if callee.kind == FuncKind.PACKED_FUNC and callee.name in kernels:
            yield pc, callee.name, values
        dst = instruction.field("dst")
        if is_special_register(dst):
            continue
        result = _result(callee.name, args, values) if callee.kind == FuncKind.PACKED_FUNC else None
        state[dst] = result
        if definitions[dst] == 1 and dst >= func.num_args and result is not None:
            stable[dst] = result


def _argument(exe, kind: int, value: int, state: dict, stable: dict) -> Value | None:
    if kind == ArgKind.REGISTER:
        if is_special_register(value):
            return Value("vm") if value == VM_REGISTER else None
        known = state.get(value)
        return known if known is not None else stable.get(value)
    if kind == ArgKind.IMMEDIATE:
        return Value("scalar", "int", number=value)
    if kind == ArgKind.CONST_INDEX:
        return _constant(exe.constants[value])
    return Value("function")


# ---- comparing a call with a kernel -----------------------------------------------------

def format_kernel(info: KernelInfo) -> str:
    """`add(A: float32[n], alpha: float32, B: float32[n])`, with `-> dtype` for a scalar result."""
    params = []
    for param in info.params:
        if param.kind == "buffer":
            params.append(f"{param.name}: {param.dtype}[{', '.join(format_expr(d) for d in param.shape)}]")
        else:
            params.append(f"{param.name}: {param.dtype}")
    return f"{info.name}({', '.join(params)})" + (f" -> {info.ret_dtype}" if info.ret_dtype else "")


def _describe(value: Value) -> str:
    if value.kind == "buffer":
        rank = f" of rank {len(value.shape)}" if value.shape is not None else ""
        text = f"{value.dtype + ' ' if value.dtype else ''}tensor{rank}"
    elif value.kind == "scalar":
        text = f"{value.dtype} scalar"
    else:
        text = value.kind
    return ("an " if text[0] in "aeiou" else "a ") + text


def _scalar_mismatch(param, value: Value) -> str | None:
    if value.kind == "buffer":
        if value.shape is None or not value.shape:
            return None  # a 0-d tensor passes as a scalar
        return f"is {_describe(value)}"
    if value.kind != "scalar":
        return f"is {_describe(value)}"
    if param.dtype.startswith("float"):
        return f"is {_describe(value)}" if value.dtype == "bool" else None
    return f"is {_describe(value)}" if value.dtype == "float" else None


def _buffer_mismatch(param, value: Value) -> str | None:
    if value.kind != "buffer":
        return f"is {_describe(value)}"
    if value.dtype is not None and value.dtype != param.dtype:
        return f"is {_describe(value)}"
    if value.shape is not None and len(value.shape) != len(param.shape):
        return f"is {_describe(value)}"
    return None


def _bound_sizes(info: KernelInfo, values: list) -> dict:
    """The kernel's size variables the call fixes, bound in the loader's order."""
    sizes = {}
    for param, value in zip(info.params, values):
        if param.kind == "scalar" and not param.dtype.startswith("float") and value is not None \
                and value.kind == "scalar" and isinstance(value.number, int):
            sizes[param.name] = value.number
    for param, value in zip(info.params, values):
        if param.kind == "buffer" and value is not None and value.kind == "buffer" and value.shape is not None:
            for dim, actual in zip(param.shape, value.shape):
                if isinstance(dim, str) and dim not in sizes and actual is not None:
                    sizes[dim] = actual
    return sizes


def _dimension_mismatch(info: KernelInfo, values: list) -> str | None:
    sizes = _bound_sizes(info, values)
    for position, (param, value) in enumerate(zip(info.params, values), 1):
        if param.kind != "buffer" or value is None or value.kind != "buffer" or value.shape is None:
            continue
        for axis, (dim, actual) in enumerate(zip(param.shape, value.shape)):
            try:
                expected = evaluate(dim, sizes)
            except (KeyError, ZeroDivisionError, TypeError, ValueError):
                continue
            if actual is not None and expected != actual:
                wanted = str(expected) if isinstance(dim, int) else f"{format_expr(dim)} = {expected}"
                return (f"argument {position} has dimension {axis} of {actual}, parameter '{param.name}' "
                        f"needs {wanted}")
    return None


def mismatch(info: KernelInfo, values: list) -> str | None:
    """Why a call with these argument Values cannot run kernel `info` (None: as far as is known, it can)."""
    if len(values) != len(info.params):
        return f"with {len(info.params)} parameter{'s' if len(info.params) != 1 else ''}"
    for position, (param, value) in enumerate(zip(info.params, values), 1):
        if value is None:
            continue
        why = (_buffer_mismatch if param.kind == "buffer" else _scalar_mismatch)(param, value)
        if why is not None:
            shape = f"[{', '.join(format_expr(d) for d in param.shape)}]" if param.kind == "buffer" else " scalar"
            return f"argument {position} {why}, parameter '{param.name}' is {param.dtype}{shape}"
    return _dimension_mismatch(info, values)


def check_kernel_calls(exe, program: str, kernel_objects, only=None) -> list[str]:
    """Every kernel call of `exe` that a kernel object's metadata refuses, in ld's words.

    `kernel_objects`: (name, KernelObject) pairs; a call is compared with each definition
    (of the names in `only`, when given)."""
    definitions: dict[str, list] = {}
    for name, kernel_object in kernel_objects:
        for info in kernel_object.kernels:
            if only is None or info.name in only:
                definitions.setdefault(info.name, []).append((name, info))
    if not definitions:
        return []
    signatures = function_signatures(exe)
    problems: list[str] = []
    for func in exe.func_table:
        if func.kind != FuncKind.VM_FUNC:
            continue
        for pc, kernel, values in _call_sites(exe, func, signatures.get(func.name), set(definitions)):
            call = f"{kernel}({', '.join('?' if v is None else str(v) for v in values)})"
            for name, info in definitions[kernel]:
                why = mismatch(info, values)
                if why is None:
                    continue
                arity = len(values) != len(info.params)
                count = f" with {len(values)} argument{'s' if len(values) != 1 else ''}" if arity else ""
                message = (f"'{program}' calls kernel '{kernel}'{count} in function '{func.name}' "
                           f"({func.name}+{pc:04d}) as {call}; '{name}' defines {format_kernel(info)}"
                           f"{' ' if arity else ': '}{why}")
                if message not in problems:
                    problems.append(message)
    return problems


def refuse_mismatched_calls(exe, artifact, kernel_objects, source: str) -> None:
    """relax.load's check of a .vmx: a hand-made artifact whose calls do not fit its kernels is refused
    before any kernel is loaded (the VM binds a name to a kernel object first, whatever the manifest says)."""
    from .load_export import member_name

    entries = artifact.info.inputs
    problems = check_kernel_calls(exe, member_name(source, entries[0], "vmo", 0),
                                  [(member_name(source, entry, "ko", index), kernel_object)
                                   for index, (entry, kernel_object) in enumerate(zip(entries[1:], kernel_objects))])
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(problems[0] + more)


__all__ = ["Value", "check_kernel_calls", "format_kernel", "mismatch", "refuse_mismatched_calls"]
