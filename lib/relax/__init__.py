"""relax: a re-implementation of Apache TVM's Relax flow in Python.

The pipeline, one folder per stage:

    script/     TVMScript text -> IR, and IR -> text
    ir/         Relax and TIR nodes, struct info, IRModule, structural equality, JSON
    op/         operator registry: struct-info inference and legalization to TIR
    transform/  Relax passes and the -O pipelines
    tir/        TIR passes that prepare kernels for code generation
    target/     targets: strings, JSON dictionaries, tags, host detection
    codegen/    TIR -> native code (llvmlite for CPUs, CUDA C for GPUs)
    vm/         bytecode, executables and their file format, the virtual machine
    runtime/    devices, tensors, the PackedFunc registry, kernel loaders

Beside them, py_module/ holds relax.BasePyModule: an IRModule with Python functions,
compiled and run just in time. py_convert/ turns Relax functions into such Python
functions (`mod.as_pyfunc("main")`, `relaxc --emit pyfunc`).

The runtime side (vm/, runtime/) never imports the compiler side, so an artifact
runs on a host that has only the runtime's needs. Names are imported lazily here
for the same reason.
"""

from .lazy_names import lazy_names as _lazy_names
from .version import __version__

__getattr__ = _lazy_names(__name__, {"VirtualMachine": ".vm", "load": ".vm", "build": ".build",
                                     "BasePyModule": ".py_module"})
