"""Decoding bytecode once, at VM start, into tuples the dispatch loop runs with least work.

Each function gets a register-file template: its registers, then a scratch slot that
stands for %void, a slot holding the VM (%vm), and one slot per distinct immediate,
constant and function value its arguments use. Every argument is then a slot index,
so gathering the arguments of a call is one C-level `itemgetter` over the register
list, and a new frame is one list copy. Jumps become absolute positions.

Decoded instructions (first element is the operation):

    (CALL, callable, gather, dst, slots)   dst = callable(*gather(regs))
    (CALL1, callable, slot, dst)      dst = callable(regs[slot])
    (CALL0, callable, None, dst)      dst = callable()
    (CALL_VM, code, gather, dst, template, num_args)   push a frame for a bytecode function
    (CALL_VM1, code, slot, dst, template)              the same with one argument
    (CALL_CLOSURE, None, gather, dst) vm.builtin.invoke_closure: a bytecode closure gets a
                                      frame in the loop, anything else is called
    (CALL_HOOKED, callable, gather, dst, name, callee)   a call seen by the instrument
    (ALLOC_CALL, site, tensor_dst, callable, gather, call_pc, dst)   a static allocation and the call
                                      after it, as one (static_calls.py; the interpreter only)
    (ALLOC_CALL2, site, tensor_dst, callable, slot0, slot1, call_pc, dst)         the same for a
    (ALLOC_CALL3, site, tensor_dst, callable, slot0, slot1, slot2, call_pc, dst)  call of two or
                                      three arguments (a unary or binary operator and its output),
                                      which reads them by slot and calls with them as they are
    (RET, slot)
    (GOTO, target)
    (IF, slot, false_target)
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Callable

from ...records import record
from ...runtime.objects import Closure
from .builtins import invoke_closure
from ..bytecode.executable import Executable, FuncInfo
from ..bytecode.isa import VM_REGISTER, VOID_REGISTER, ArgKind, Opcode, decode_arg

(CALL, CALL1, CALL0, RET, GOTO, IF, CALL_VM, CALL_VM1, CALL_CLOSURE, CALL_HOOKED, ALLOC_CALL, ALLOC_CALL2,
 ALLOC_CALL3) = range(13)
# The fused allocation-and-call instructions, by the argument count they read by slot (None: any).
ALLOC_CALLS = {2: ALLOC_CALL2, 3: ALLOC_CALL3, None: ALLOC_CALL}


@record(mutable=True)
class DecodedFunction:
    index: int
    name: str
    num_args: int
    param_names: tuple[str, ...]
    template: list
    code: list[tuple]
    start_instr: int


def _gather(slots: list[int]) -> Callable[[list], tuple]:
    if not slots:
        return lambda regs: ()
    if len(slots) == 1:
        slot = slots[0]
        return lambda regs: (regs[slot],)
    return itemgetter(*slots)


class _Slots:
    """Assigns template slots to the non-register arguments of one function."""

    def __init__(self, info: FuncInfo, vm: Any):
        self.template: list = [None] * info.register_file_size + [None, vm]
        self.void = info.register_file_size
        self.vm = info.register_file_size + 1
        self._values: dict[tuple, int] = {}

    def value(self, key: tuple, value: Any) -> int:
        slot = self._values.get(key)
        if slot is None:
            slot = self._values[key] = len(self.template)
            self.template.append(value)
        return slot


def empty_function(exe: Executable, index: int) -> DecodedFunction:
    """A function to be filled by decode_function (calls may refer to it before that)."""
    info = exe.func_table[index]
    return DecodedFunction(index, info.name, info.num_args, info.param_names, [], [], info.start_instr)


def decode_function(exe: Executable, function: DecodedFunction, vm: Any, constants: list, func_pool: list,
                    bytecode: list, hooked: bool) -> None:
    """Fills `function`; `bytecode[i]` is the DecodedFunction of table entry i (or None)."""
    info = exe.func_table[function.index]
    slots = _Slots(info, vm)

    def slot_of(word: int) -> int:
        kind, value = decode_arg(word)
        if kind == ArgKind.REGISTER:
            return slots.vm if value == VM_REGISTER else value
        if kind == ArgKind.IMMEDIATE:
            return slots.value(("imm", value), value)
        if kind == ArgKind.CONST_INDEX:
            return slots.value(("const", value), constants[value])
        return slots.value(("func", value), func_pool[value])

    code = []
    for position, instr in enumerate(exe.instructions(info)):
        if instr.opcode == Opcode.RET:
            code.append((RET, instr.field("result")))
        elif instr.opcode == Opcode.GOTO:
            code.append((GOTO, position + instr.field("pc_offset")))
        elif instr.opcode == Opcode.IF:
            code.append((IF, instr.field("cond"), position + instr.field("false_offset")))
        else:
            code.append(_decode_call(exe, instr, [slot_of(word) for word in instr.args], slots, func_pool,
                                     bytecode, hooked))
    # Filled in place: the CALL_VM tuples of callers already hold these two lists.
    function.template[:] = slots.template
    function.code[:] = code


def _decode_call(exe, instr, arg_slots, slots, func_pool, bytecode, hooked) -> tuple:
    dst = instr.field("dst")
    dst = slots.void if dst == VOID_REGISTER else dst
    func_index = instr.field("func_index")
    callee = bytecode[func_index]
    target = func_pool[func_index]
    if isinstance(target, Closure) and callee is None:
        target = target.impl  # a compiled-TIR function: call its implementation directly
    if hooked:
        return (CALL_HOOKED, target, _gather(arg_slots), dst, exe.func_table[func_index].name, callee)
    if callee is not None and len(arg_slots) == 1:
        return (CALL_VM1, callee.code, arg_slots[0], dst, callee.template)
    if callee is not None:
        return (CALL_VM, callee.code, _gather(arg_slots), dst, callee.template, callee.num_args)
    # A kernel's METH_FASTCALL builtin (runtime/kernels/fast_native.py) in place of its Python fast call.
    target = getattr(target, "builtin", None) or target
    if target is invoke_closure and len(arg_slots) >= 2:
        return (CALL_CLOSURE, None, _gather(arg_slots), dst)
    if len(arg_slots) == 0:
        return (CALL0, target, None, dst)
    if len(arg_slots) == 1:
        return (CALL1, target, arg_slots[0], dst)
    return (CALL, target, _gather(arg_slots), dst, tuple(arg_slots))  # the slots for static_calls.py
