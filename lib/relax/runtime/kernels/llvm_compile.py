"""Optimizing and compiling LLVM modules: shared by the code generator and the loader.

The loader needs this to compile bitcode for the host on load, so it lives on the
runtime side; the code generator imports it from here.
"""

from __future__ import annotations

import llvmlite.binding as llvm

from .host import initialize_llvm
from .libmvec import map_to_libmvec, uses_libmvec, vector_intrinsics


def pass_pipeline(target_machine: "llvm.TargetMachine", speed_level: int = 3, slp: bool = True):
    """(pass builder, module pass manager) of LLVM's default per-module pipeline at O`speed_level`,
    vectorizers and unrolling on from O2 (the SLP vectorizer only when `slp`)."""
    initialize_llvm()
    tuning = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    tuning.loop_vectorization = speed_level >= 2
    tuning.slp_vectorization = speed_level >= 2 and slp
    tuning.loop_unrolling = speed_level >= 2
    builder = llvm.create_pass_builder(target_machine, tuning)
    return builder, builder.getModulePassManager()


def slp_is_safe(text: str) -> bool:
    """Whether the SLP vectorizer may run on a module of this LLVM IR text: not when it reads
    bool values (a byte compared with zero). From those it builds i1-vector inserts that
    LLVM 22's X86 backend miscompiles with AVX-512 mask registers (a where() over a broadcast
    bool mask took the wrong branch in one lane); the loop vectorizer still vectorizes such
    kernels' loops."""
    return "= icmp ne i8 " not in text


def optimize(module: "llvm.ModuleRef", target_machine: "llvm.TargetMachine", speed_level: int = 3) -> None:
    """Runs LLVM's default per-module pipeline (O`speed_level`) in place."""
    builder, manager = pass_pipeline(target_machine, speed_level, slp_is_safe(str(module)))
    manager.run(module, builder)


def compile_bitcode(bitcode: bytes, target_machine: "llvm.TargetMachine",
                    vector_extensions: frozenset[str] = frozenset()) -> bytes:
    """Native object code for `target_machine` from (unoptimized) bitcode; on x86-64 Linux,
    vector math calls go to libmvec for the machine's `vector_extensions` (libmvec.py), as
    in the objects the code generator builds."""
    initialize_llvm()
    module = llvm.parse_bitcode(bitcode)
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    optimize(module, target_machine)
    if uses_libmvec(target_machine.triple) and vector_intrinsics(module):
        module = llvm.parse_assembly(map_to_libmvec(str(module), vector_extensions))
    return target_machine.emit_object(module)
