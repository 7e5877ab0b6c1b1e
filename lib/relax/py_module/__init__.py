"""Python functions in an IRModule, run just in time: relax.BasePyModule.

An `@I.ir_module class M(BasePyModule):` holds `@I.py_func` methods beside its Relax
functions and PrimFuncs (the parser keeps each as a PyFunction: script/py_function.py).
Instantiating it compiles the Relax functions and PrimFuncs (relax.build), creates a
VM, and binds every function as a method, so that a Python function can mix numpy or
PyTorch code with compiled kernels (`self.call_tir`), registered functions
(`self.call_dps_packed`) and Relax functions (`self.f(x)`). It sits on top of the
compiler and the VM, beside relax.build:

    base_py_module   BasePyModule, TirFunction, and the class binding of @I.ir_module
    dps_calls        call_tir / call_dps_packed: output allocation and size binding
    dlpack_arrays    numpy inside; DLPack arrays in, results back in the caller's framework
    python_source    a PyFunction's source text as a Python function
"""

from .base_py_module import BasePyModule, TirFunction

__all__ = ["BasePyModule", "TirFunction"]
