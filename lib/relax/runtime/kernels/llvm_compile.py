"""Compiling LLVM bitcode on load, and the SLP check that the code generator shares with it.

The loader compiles the bitcode of a kernel object for this host when no native object
fits it, so this lives on the runtime side; both go through llvm_capi.py.
"""

from __future__ import annotations

from ... import llvm_capi
from .libmvec import to_libmvec


def slp_is_safe(text: str) -> bool:
    """Whether the SLP vectorizer may run on a module of this LLVM IR text: not when it reads
    bool values (a byte compared with zero). From those it builds i1-vector inserts that
    LLVM 22's X86 backend miscompiles with AVX-512 mask registers (a where() over a broadcast
    bool mask took the wrong branch in one lane); the loop vectorizer still vectorizes such
    kernels' loops."""
    return "= icmp ne i8 " not in text


def compile_bitcode(bitcode: bytes, machine: llvm_capi.TargetMachine,
                    vector_extensions: frozenset[str] = frozenset()) -> bytes:
    """Native object code for `machine` from (unoptimized) bitcode, at O3; on x86-64 Linux,
    vector math calls go to libmvec for the machine's `vector_extensions` (libmvec.py), as
    in the objects the code generator builds."""
    with llvm_capi.Context() as context:
        module = llvm_capi.Module.parse_bitcode(bitcode, context)
        module.set_triple(machine.triple)
        module.set_data_layout(machine.data_layout)
        llvm_capi.optimize(module, machine, 3, slp_is_safe(str(module)))
        to_libmvec(module, machine.triple, vector_extensions)
        return machine.emit(module)
