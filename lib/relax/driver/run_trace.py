"""`relaxrun --trace`: runs a function instruction by instruction, printing each one.

A plain, slow interpreter beside the VM's fast loop (vm/machine/virtual_machine.py), built on the
same pieces: the executable's instructions, the VM's constants and function pool.
Each executed instruction is one line on stderr,

    [trace] main+0004  call  vm.builtin.alloc_storage in: %vm, c[1], i0, c[2] dst: %5  => Storage  model.relax:7:5

with the value the call produced. Bytecode functions called from bytecode, and
bytecode closures called through vm.builtin.invoke_closure, are traced too.
"""

from __future__ import annotations

import sys

import numpy as np

from ..runtime.errors import Frame, VMError
from ..runtime.objects import Closure, ShapeTuple
from ..vm.bytecode.isa import VM_REGISTER, VOID_REGISTER, ArgKind, FuncKind, Opcode, decode_arg
from ..vm.bytecode.listing import format_instruction
from .run_inputs import type_spec


def describe(value) -> str:
    if isinstance(value, np.ndarray):
        try:
            return type_spec(value)
        except Exception:  # noqa: BLE001 - a tensor of an exotic dtype still gets a line
            return f"array{value.shape}"
    if isinstance(value, ShapeTuple):
        return f"R.shape({list(value)})"
    if isinstance(value, tuple):
        return f"({', '.join(describe(item) for item in value)})"
    if value is None:
        return "None"
    if isinstance(value, (int, float, str)):
        return repr(value)
    return type(value).__name__


class Tracer:
    def __init__(self, vm, out=None):
        self.vm = vm
        self.exe = vm.exe
        self.out = out or sys.stderr
        self.frames: list[Frame] = []
        self.invoke_closure = _invoke_closure_builtin()

    def run(self, func_name: str, args: tuple):
        index = self.exe.function_index(func_name)
        try:
            return self.call_function(index, tuple(args))
        except VMError as error:
            if not error.backtrace:
                error.backtrace = tuple(self.frames)
            raise
        except Exception as error:  # noqa: BLE001 - every failure gets the VM backtrace
            raise VMError(f"{type(error).__name__}: {error}", tuple(self.frames)) from error

    def call_function(self, index: int, args: tuple):
        info = self.exe.func_table[index]
        if len(args) != info.num_args:
            raise VMError(f"function '{info.name}' takes {info.num_args} arguments, got {len(args)}")
        regs = list(args) + [None] * (info.register_file_size - len(args))
        pc = 0
        self.frames.append(Frame(info.name, 0))
        while True:
            location = self.exe.source_locations.get(info.start_instr + pc)
            self.frames[-1] = Frame(info.name, pc, location)
            instr = self.exe.get_instruction(info.start_instr + pc)
            prefix = f"[trace] {info.name}+{pc:04d}  {format_instruction(self.exe, instr)}"
            suffix = f"  {location}" if location else ""
            if instr.opcode == Opcode.RET:
                self.out.write(prefix + suffix + "\n")
                self.frames.pop()
                return regs[instr.field("result")]
            if instr.opcode == Opcode.GOTO:
                self.out.write(prefix + suffix + "\n")
                pc += instr.field("pc_offset")
            elif instr.opcode == Opcode.IF:
                taken = bool(regs[instr.field("cond")])
                self.out.write(f"{prefix}  => {'then' if taken else 'else'}{suffix}\n")
                pc = pc + 1 if taken else pc + instr.field("false_offset")
            else:
                self.out.write(prefix + suffix + "\n")
                value = self.call(instr, regs)
                dst = instr.field("dst")
                if dst != VOID_REGISTER:
                    regs[dst] = value
                    self.out.write(f"[trace]   => {describe(value)}\n")
                pc += 1

    def argument(self, word: int, regs: list):
        kind, value = decode_arg(word)
        if kind == ArgKind.REGISTER:
            return self.vm if value == VM_REGISTER else regs[value]
        if kind == ArgKind.IMMEDIATE:
            return value
        if kind == ArgKind.CONST_INDEX:
            return self.vm.constants[value]
        return self.vm.func_pool[value]

    def call(self, instr, regs: list):
        args = tuple(self.argument(word, regs) for word in instr.args)
        func_index = instr.field("func_index")
        info = self.exe.func_table[func_index]
        if info.kind == FuncKind.VM_FUNC:
            return self.call_function(func_index, args)
        target = self.vm.func_pool[func_index]
        if target is self.invoke_closure and len(args) >= 2:
            closure = args[1]
            if isinstance(closure, Closure) and closure.func_index is not None:
                return self.call_function(closure.func_index, args[2:] + closure.bound_args)
        if isinstance(target, Closure):
            return self.vm.invoke_closure(target, *args)
        return target(*args)


def _invoke_closure_builtin():
    from ..vm.machine.builtins import invoke_closure

    return invoke_closure


def trace_call(vm, func_name: str, args: tuple, out=None):
    """Runs `func_name` with `args` (VM values), printing every instruction; returns its result."""
    return Tracer(vm, out).run(func_name, args)
