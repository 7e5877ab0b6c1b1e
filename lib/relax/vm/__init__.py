"""The Relax virtual machine: bytecode, executables, and the interpreter that runs them.

It sits after code generation in the flow: the code generator writes bytecode
through the ExecBuilder, the Executable is saved as a .vmo file (and linked into a
.vmx), and the VirtualMachine runs it, reaching kernels and builtins through the
runtime's PackedFunc registry. Modules:

    isa           opcodes, argument words, special registers (the one table)
    builder       ExecBuilder, the Python API that writes bytecode
    executable    Executable: function table, constant pool, bytecode, imports
    serialization the .vmo file format; verifier checks everything on load
    listing       as_text / as_python / stats; assembler reads as_text back
    machine       VirtualMachine: frames, dispatch loop, Python API
    builtins      vm.builtin.* functions, registered by name
"""

from .builder import ExecBuilder
from .executable import Executable, FuncInfo
from .isa import VM_REGISTER, VOID_REGISTER, ArgKind, FuncKind, Opcode
from .loader import load, load_bytes, register_loader
from .machine import VirtualMachine, VMInstrumentReturnKind
from .verifier import VerificationError

__all__ = [
    "ArgKind", "ExecBuilder", "Executable", "FuncInfo", "FuncKind", "Opcode", "VM_REGISTER", "VOID_REGISTER",
    "VMInstrumentReturnKind", "VerificationError", "VirtualMachine", "load", "load_bytes", "register_loader",
]
