"""Interpreter superinstructions for static allocations followed by a call.

At -O0 (and wherever memory planning leaves one storage per tensor) every operator
is three instructions: `alloc_storage` of a static size, `alloc_tensor` of that
storage, and the kernel call writing the tensor. After static_memory.py has made the
two allocations per-VM sites, `fuse_static_calls` folds each such triple into one
ALLOC_CALL instruction (decoder.py) at the first position:

    (ALLOC_CALL, site, tensor_dst, target, gather, call_pc, call_dst)

(ALLOC_CALL2 or ALLOC_CALL3 with the argument slots in place of `gather` where the call
takes two or three arguments, as a unary or binary operator's does: the loop then reads
them and calls without a tuple built and unpacked per operator),
which sets the tensor register from a StaticTensor (the two sites, with a cheaper
reuse check made in the loop itself) and then makes the call, as position `call_pc`
(a failure's backtrace names the call), and goes on after it. The storage register is never set:
the triple is fused only when nothing else in the function reads it, when neither
of the two later positions is a jump target (nothing enters the triple halfway), and
only for the interpreter (compiled mode and the instrument decode the three).
"""

from __future__ import annotations

from sys import getrefcount

from .static_memory import StorageSite, TensorSite


class StaticTensor:
    """A StorageSite and the TensorSite of its storage, handing out one tensor.

    The dispatch loop (virtual_machine.py, the ALLOC_CALLs) hands `view` out again when
    `getrefcount(view) == view_refs and getrefcount(raw) == raw_refs`: the counts right
    after `made()` made it, when nothing but the sites held it (no register of a running
    frame, no caller, no packed function, no other view of the memory). Otherwise it
    calls `made()`, where the two sites decide as they do unfused.
    """

    __slots__ = ("storage_site", "tensor_site", "view", "raw", "view_refs", "raw_refs")

    def __init__(self, storage_site: StorageSite, tensor_site: TensorSite):
        self.storage_site, self.tensor_site = storage_site, tensor_site
        self.view = self.raw = None
        self.view_refs = self.raw_refs = -1

    def made(self):
        self.view = self.raw = None  # our own references would keep the sites from reusing
        view = self.tensor_site(self.storage_site())
        self.view, self.raw = view, self.storage_site.raw
        # Counted as the loop counts them: the attribute, one local (`view`), getrefcount's argument.
        self.view_refs = getrefcount(view) if self.raw is not None else -1
        self.raw_refs = getrefcount(self.raw) if self.raw is not None else -1
        return view


def _site(decoded: tuple, kind: type):
    method = decoded[1]
    owner = getattr(method, "__self__", None)
    return owner if type(owner) is kind else None


def _reads(exe, info) -> dict[int, int]:
    """How many times each register of a function is read (arguments, results, conditions)."""
    from ..bytecode.isa import ArgKind, Opcode, decode_arg

    counts: dict[int, int] = {}
    for instr in exe.instructions(info):
        if instr.opcode == Opcode.RET:
            registers = [instr.field("result")]
        elif instr.opcode == Opcode.IF:
            registers = [instr.field("cond")]
        elif instr.opcode == Opcode.GOTO:
            registers = []
        else:
            registers = [value for kind, value in map(decode_arg, instr.args) if kind == ArgKind.REGISTER]
        for register in registers:
            counts[register] = counts.get(register, 0) + 1
    return counts


def fuse_static_calls(exe, bytecode: list) -> None:
    """Replaces each fusable alloc_storage / alloc_tensor / call triple by an ALLOC_CALL
    (ALLOC_CALL2 or ALLOC_CALL3 for a call of two or three arguments)."""
    from .decoder import ALLOC_CALLS, CALL, CALL0, CALL1, GOTO, IF

    for function in bytecode:
        if function is None:
            continue
        code = function.code
        targets = {instr[1] for instr in code if instr[0] == GOTO} | {instr[2] for instr in code if instr[0] == IF}
        reads = None
        for pc in range(len(code) - 2):
            first, second, third = code[pc], code[pc + 1], code[pc + 2]
            if first[0] != CALL0 or second[0] != CALL1 or third[0] != CALL or second[2] != first[3]:
                continue
            storage_site, tensor_site = _site(first, StorageSite), _site(second, TensorSite)
            if storage_site is None or tensor_site is None or pc + 1 in targets or pc + 2 in targets:
                continue
            reads = reads if reads is not None else _reads(exe, exe.func_table[function.index])
            if reads.get(first[3], 0) != 1:
                continue
            site = StaticTensor(storage_site, tensor_site)
            slots = third[4]
            by_slot = len(slots) in ALLOC_CALLS
            arguments = slots if by_slot else (third[2],)  # the slots, or the gather
            code[pc] = (ALLOC_CALLS[len(slots) if by_slot else None], site, second[3], third[1], *arguments,
                        pc + 2, third[3])
