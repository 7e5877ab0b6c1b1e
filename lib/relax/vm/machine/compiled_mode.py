"""exec_mode="compiled": each bytecode function as one Python function, with no dispatch loop.

The seed is TVM's VMTIRCodeGen (bytecode as straight-line code); here the target is
Python. For every bytecode function the VM decoded, this module writes Python source
from the verified instructions and compiles it with `compile()`. The text is made by
the toolchain only: registers become locals `r0, r1, ...`, immediates integer
literals, and everything else (constants, callees, sites, the VM) reaches the code as
closure variables named `k0, k1, ...`; no name or string from the executable appears in
it. Calls go straight to what the decoder resolved (kernels' fast calls, static memory
sites, builtins); a call to another bytecode function calls its compiled function.

    Call  f(a, b) -> %3        r3 = k5(r0, r1)
    If %2, else                if r2: <then> else: <else>   (the if/goto shape the code
    Goto end                   generator emits; other jumps use a small block machine)
    Ret %3                     return r3

Generated code nests no deeper than a fixed bound, whatever the program: structured
code deeper than MAX_NESTED_IFS falls back to the block machine, whose dispatch is a
chain of at most DISPATCH_CHAIN tests under a balanced tree of `if block < n` tests
(Python refuses about 100 indentation levels, and an elif chain of a few thousand).

Errors are reported as the interpreter reports them: a failing line is mapped back to
its instruction through the traceback (no bookkeeping while running), and the VMError
carries Frame(function, pc, location) entries, outermost first. Bytecode calling
bytecode recurses in Python here, so deep recursion stops at Python's recursion limit
(the interpreter's own limit is MAX_FRAMES).
"""

from __future__ import annotations

from ...runtime.errors import Frame, VMError
from ...runtime.objects import Closure
from .decoder import CALL0, CALL1, CALL_CLOSURE, CALL_VM, CALL_VM1
from ..bytecode.isa import VM_REGISTER, VOID_REGISTER, ArgKind, Opcode, decode_arg

MAX_NESTED_IFS = 32
DISPATCH_CHAIN = 32
_BODY_INDENT = 3  # def make > def f > try


class _Writer:
    """Python source for one bytecode function, and the values its closure variables hold."""

    def __init__(self, vm, function, compiled: list, fail):
        self.vm = vm
        self.function = function
        self.compiled = compiled
        self.fail = fail
        self.info = vm.exe.func_table[function.index]
        self.instructions = vm.exe.instructions(self.info)
        self.values: list = []
        self._names: dict[tuple, str] = {}
        self.lines: list[str] = []
        self.pc_of_line: dict[int, int] = {}

    # -- names -------------------------------------------------------------------------
    def value(self, key: tuple, value) -> str:
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = f"k{len(self.values)}"
            self.values.append(value)
        return name

    def arg(self, word: int) -> str:
        kind, value = decode_arg(word)
        if kind == ArgKind.REGISTER:
            return self.value(("vm",), self.vm) if value == VM_REGISTER else f"r{value}"
        if kind == ArgKind.IMMEDIATE:
            return repr(int(value))
        if kind == ArgKind.CONST_INDEX:
            return self.value(("const", value), self.vm.constants[value])
        return self.value(("func", value), self.vm.func_pool[value])

    def emit(self, indent: int, text: str, pc: int | None = None) -> None:
        self.lines.append("    " * indent + text)
        if pc is not None:
            self.pc_of_line[len(self.lines)] = pc

    # -- instructions ------------------------------------------------------------------
    def call(self, pc: int) -> str:
        instr = self.instructions[pc]
        decoded = self.function.code[pc]
        op = decoded[0]
        args = [self.arg(word) for word in instr.args]
        if op == CALL0:
            target, args = self.value(("target", pc), decoded[1]), []
        elif op == CALL1:
            target, args = self.value(("target", pc), decoded[1]), args[:1]
        elif op in (CALL_VM, CALL_VM1):
            target = f"G{instr.field('func_index')}"  # a global of the VM's namespace, set once all are compiled
        elif op == CALL_CLOSURE:
            target, args = self.value(("closure",), _closure_caller(self.vm, self.compiled)), args[1:]
        else:
            target = self.value(("target", pc), decoded[1])
            entry = getattr(decoded[1], "entry", None)
            if entry is not None:  # a kernel's native entry, called inline (runtime/kernels/fast_call.py)
                return self.native_call(pc, entry, decoded[1].checked, args, instr.field("dst"))
        expression = f"{target}({', '.join(args)})"
        dst = instr.field("dst")
        return expression if dst == VOID_REGISTER else f"r{dst} = {expression}"

    def native_call(self, pc: int, entry, checked, args: list, dst: int) -> str:
        entry_name = self.value(("entry", pc), entry)
        checked_name = self.value(("checked", pc), checked)
        packed = f"({', '.join(args)},)"
        if dst == VOID_REGISTER:
            return f"if {entry_name}({packed}): {checked_name}({', '.join(args)})"
        return f"r{dst} = {checked_name}({', '.join(args)}) if {entry_name}({packed}) else None"

    def block(self, start: int, end: int, indent: int) -> bool:
        """Writes instructions [start, end) as structured code; False if the jumps do not allow it."""
        if indent > _BODY_INDENT + MAX_NESTED_IFS:
            return False
        pc = start
        while pc < end:
            instr = self.instructions[pc]
            if instr.opcode == Opcode.CALL:
                self.emit(indent, self.call(pc), pc)
                pc += 1
            elif instr.opcode == Opcode.RET:
                self.emit(indent, f"return r{instr.field('result')}", pc)
                pc += 1
            elif instr.opcode == Opcode.IF:
                else_start = pc + instr.field("false_offset")
                if not pc < else_start <= end:
                    return False
                last = self.instructions[else_start - 1]
                self.emit(indent, f"if r{instr.field('cond')}:", pc)
                if last.opcode == Opcode.GOTO and else_start - 1 > pc:
                    join = else_start - 1 + last.field("pc_offset")
                    if not else_start <= join <= end:
                        return False
                    if not self.block(pc + 1, else_start - 1, indent + 1):
                        return False
                    self.emit(indent + 1, "pass")
                    self.emit(indent, "else:")
                    if not self.block(else_start, join, indent + 1):
                        return False
                    self.emit(indent + 1, "pass")
                    pc = join
                elif last.opcode == Opcode.RET:
                    if not self.block(pc + 1, else_start, indent + 1):
                        return False
                    pc = else_start
                else:
                    return False
            else:
                return False  # a Goto that is not the end of a then-branch
        return True

    def block_machine(self, indent: int) -> None:
        """Any jumps: basic blocks in a loop, one `if block == n` per block."""
        starts = {0}
        for pc, instr in enumerate(self.instructions):
            if instr.opcode == Opcode.IF:
                starts.update((pc + 1, pc + instr.field("false_offset")))
            elif instr.opcode == Opcode.GOTO:
                starts.update((pc + 1, pc + instr.field("pc_offset")))
            elif instr.opcode == Opcode.RET:
                starts.add(pc + 1)
        starts = sorted(s for s in starts if s < len(self.instructions))
        self.emit(indent, "block = 0")
        self.emit(indent, "while True:")
        self.dispatch(starts, 0, len(starts), indent + 1)

    def dispatch(self, starts: list, first: int, last: int, indent: int) -> None:
        """Blocks starts[first:last]: an if/elif chain, or `if block < n` halves when there are many."""
        if last - first > DISPATCH_CHAIN:
            middle = (first + last) // 2
            self.emit(indent, f"if block < {starts[middle]}:")
            self.dispatch(starts, first, middle, indent + 1)
            self.emit(indent, "else:")
            self.dispatch(starts, middle, last, indent + 1)
            return
        for number in range(first, last):
            start = starts[number]
            end = starts[number + 1] if number + 1 < len(starts) else len(self.instructions)
            self.emit(indent, f"{'if' if number == first else 'elif'} block == {start}:")
            self.basic_block(start, end, indent + 1)
        self.emit(indent, "else:")
        self.emit(indent + 1, "raise IndexError(f'jump to {block}, outside the function')")

    def basic_block(self, start: int, end: int, indent: int) -> None:
        for pc in range(start, end):
            instr = self.instructions[pc]
            if instr.opcode == Opcode.CALL:
                self.emit(indent, self.call(pc), pc)
            elif instr.opcode == Opcode.RET:
                self.emit(indent, f"return r{instr.field('result')}", pc)
            elif instr.opcode == Opcode.GOTO:
                self.emit(indent, f"block = {pc + instr.field('pc_offset')}", pc)
                self.emit(indent, "continue")
            elif instr.opcode == Opcode.IF:
                self.emit(indent, f"block = {pc + 1} if r{instr.field('cond')} else "
                                  f"{pc + instr.field('false_offset')}", pc)
                self.emit(indent, "continue")
        self.emit(indent, f"block = {end}")

    # -- the whole function ------------------------------------------------------------
    def source(self) -> str:
        params = [f"r{i}" for i in range(self.function.num_args)]
        self.emit(1, f"def f({', '.join(params)}):")
        others = [f"r{i}" for i in range(self.function.num_args, self.info.register_file_size)]
        if others:
            self.emit(2, " = ".join(others) + " = None")
        self.emit(2, "try:")
        mark = len(self.lines), dict(self.pc_of_line), len(self.values), dict(self._names)
        if not self.block(0, len(self.instructions), 3):
            del self.lines[mark[0]:]
            self.pc_of_line = mark[1]
            self.block_machine(3)
        self.emit(2, "except Exception as error:")
        self.emit(3, f"{self.value(('fail',), self.fail)}(error)")
        self.emit(3, "raise")
        self.emit(1, "return f")
        names = ", ".join(f"k{i}" for i in range(len(self.values)))
        return f"def make({names}):\n" + "\n".join(self.lines) + "\n"


def _closure_caller(vm, compiled: list):
    """vm.builtin.invoke_closure in compiled code: a bytecode closure calls its compiled function."""

    def invoke_closure(closure, *args):
        if closure.__class__ is Closure and closure.func_index is not None:
            function = vm._bytecode[closure.func_index]
            args = args + closure.bound_args
            if len(args) != function.num_args:
                raise VMError(f"closure of '{function.name}' called with {len(args)} arguments, "
                              f"it takes {function.num_args}")
            return compiled[closure.func_index](*args)
        return vm.invoke_closure(closure, *args)

    return invoke_closure


def _failure(vm, function, pc_of_line: dict, code_holder: list):
    """The except-clause helper: adds this function's frame to the error (or wraps it in a VMError)."""
    location_base = function.start_instr

    def fail(error):
        pc = 0
        tb = error.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is code_holder[0]:
                pc = pc_of_line.get(tb.tb_lineno, 0)
                break
            tb = tb.tb_next
        frame = Frame(function.name, pc, vm.exe.source_locations.get(location_base + pc))
        failure = vm._with_frames(error, (frame,))
        if failure is not error:
            raise failure from error

    return fail


def compile_function(vm, function, compiled: list, namespace: dict):
    """The Python function running bytecode function `function` (a DecodedFunction) on `vm`."""
    pc_of_line: dict[int, int] = {}
    code_holder: list = [None]
    writer = _Writer(vm, function, compiled, _failure(vm, function, pc_of_line, code_holder))
    text = writer.source()
    pc_of_line.update({line + 1: pc for line, pc in writer.pc_of_line.items()})  # +1: the `def make` line
    exec(compile(text, f"<relax compiled: {function.name}>", "exec"), namespace)  # noqa: S102 - generated text
    made = namespace.pop("make")(*writer.values)
    identifier = _identifier(function.name)
    made.__code__ = made.__code__.replace(co_name=identifier, co_qualname=identifier)
    made.__name__ = made.__qualname__ = function.name
    code_holder[0] = made.__code__
    made.source = text
    return made


def _identifier(name: str) -> str:
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return text if text and not text[0].isdigit() else f"f_{text}"


def compile_functions(vm, bytecode: list) -> list:
    """One compiled function per bytecode function of the table (None for other kinds)."""
    compiled: list = [None] * len(bytecode)
    namespace: dict = {}
    for function in bytecode:
        if function is not None:
            compiled[function.index] = namespace[f"G{function.index}"] = compile_function(
                vm, function, compiled, namespace)
    return compiled
