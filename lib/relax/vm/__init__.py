"""The Relax virtual machine: bytecode, executables, and the interpreter that runs them.

It sits after code generation in the flow: the code generator writes bytecode
through the ExecBuilder, the Executable is saved as a .vmo file (and linked into a
.vmx), and the VirtualMachine runs it, reaching kernels and builtins through the
runtime's PackedFunc registry. Its folders, by role:

    bytecode/   the format: isa (the one opcode table), executable, exec_builder,
                vmo (the .vmo file), verifier, loader, signature records, listings
    codegen/    generating bytecode: CodeGenVM, the assembler
    artifact/   the .vmx: its format, the linker, loading and exporting
    machine/    running it: VirtualMachine, vm.builtin.*, the execution tiers

The runtime side (bytecode/, artifact/ loading, machine/) never imports the compiler.
"""

from ..lazy_names import lazy_names
from .bytecode.exec_builder import ExecBuilder
from .bytecode.executable import Executable, FuncInfo
from .bytecode.isa import VM_REGISTER, VOID_REGISTER, ArgKind, FuncKind, Opcode
from .bytecode.loader import load, load_bytes, register_loader
from .bytecode.verifier import VerificationError
from .machine import builtins as _builtins  # noqa: F401 - registers vm.builtin.*, as importing relax.vm always has

__all__ = [
    "ArgKind", "ExecBuilder", "Executable", "FuncInfo", "FuncKind", "Opcode", "VM_REGISTER", "VOID_REGISTER",
    "VMInstrumentReturnKind", "VerificationError", "VirtualMachine", "load", "load_bytes", "register_loader",
]

# The rest of the machine loads the kernel runtime and LLVM: imported when first asked
# for, so that the assembler and the linker (bytecode/, artifact/) start without them.
__getattr__ = lazy_names(__name__, dict.fromkeys(("VirtualMachine", "VMInstrumentReturnKind"),
                                                 ".machine.virtual_machine"))
