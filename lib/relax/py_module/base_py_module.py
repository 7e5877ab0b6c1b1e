"""BasePyModule: an IRModule with Python functions, compiled when instantiated.

    m = relax.BasePyModule(mod, device="cpu")      # or M("cpu") for an @I.ir_module class
    m.main(x, w)                                  # a Python function, a Relax function: arrays in

Instantiation builds the module's Relax functions and PrimFuncs with relax.build (the
default pipeline for the target, as relaxc builds them) and creates a VM. Every
function of the module becomes an attribute of the instance:

    Relax function   runs on the VM                  self.my_identity_func(x)
    PrimFunc         a TirFunction for call_tir      self.call_tir(self.matmul, [x, w], out_sinfo=...)
    Python function  a method, called in Python      self.helper(x)

Arrays are numpy; any DLPack array (PyTorch, CuPy) is read without a copy and the
results of a call go back to the caller's framework (dlpack_arrays.py).
"""

from __future__ import annotations

import dataclasses

import types

from .. import ir
from ..diagnostics import UserError
from ..runtime.device import CPU, Device
from ..runtime.registry import get_global_func
from .dlpack_arrays import framework_of, to_framework, to_numpy
from .dps_calls import allocate, bind_sizes, check_arity, check_outputs, output_infos
from .python_source import python_function


class TirFunction:
    """A PrimFunc of the module with its compiled kernel. `self.call_tir(self.f, ...)`
    allocates the outputs; calling it directly is destination-passing: `self.f(x, out)`."""

    def __init__(self, name: str, prim_func: ir.tir.PrimFunc, kernel):
        self.name = name
        self.prim_func = prim_func
        self.kernel = kernel

    def __call__(self, *args) -> None:
        self.kernel(*to_numpy(args))

    def __repr__(self) -> str:
        return f"<TirFunction {self.name}>"


class BasePyModule:
    """An IRModule whose Relax functions and PrimFuncs are compiled and whose Python
    functions (`@I.py_func`) are methods; every function is an attribute."""

    def __init__(self, mod: ir.IRModule, device="cpu", target=None):
        from ..build import build
        from ..vm import VirtualMachine

        if not isinstance(mod, ir.IRModule):
            raise UserError(f"BasePyModule takes an IRModule, got {type(mod).__name__}")
        self.device = Device.parse(device)
        if self.device.device_type != CPU:
            raise UserError(f"BasePyModule runs on the CPU; device {self.device} is not supported")
        self.ir_mod = mod
        self.executable = build(_kernels_public(mod), target if target is not None else "llvm")
        self.python_functions: dict[str, object] = {}  # name -> bound method, for call_py_func
        for name, func in mod.functions.items():
            if hasattr(BasePyModule, name) or name in vars(self):
                raise UserError(f"function '{name}' has the name of a BasePyModule attribute; rename it")
            if isinstance(func, ir.PyFunction):
                setattr(self, name, self._member(name, func))
        # R.call_py_func in a Relax function calls this module's own Python functions.
        self.vm = VirtualMachine(self.executable, self.device, py_functions=self.python_functions)
        for name, func in mod.functions.items():
            if not isinstance(func, ir.PyFunction):
                setattr(self, name, self._member(name, func))

    # -- the module's functions as attributes ---------------------------------------------
    def _member(self, name: str, func):
        if isinstance(func, ir.tir.PrimFunc):
            return TirFunction(name, func, self._kernel(name))
        if isinstance(func, ir.PyFunction):
            method = self._python_method(name, func)
            self.python_functions[name] = method
            return method
        return self._relax_method(name)

    def _kernel(self, name: str):
        for library in self.executable.imports:
            found = library.get_function(name)
            if found is not None:
                return found
        raise UserError(f"TIR function '{name}' has no compiled kernel")

    def _relax_method(self, name: str):
        function = self.vm[name]

        def call(*args, **kwargs):
            framework = framework_of(list(args) + list(kwargs.values()))
            kwargs = {key: to_numpy(value) for key, value in kwargs.items()}
            return to_framework(function(*to_numpy(args), **kwargs), framework)

        call.__name__ = name
        return call

    def _python_method(self, name: str, func: ir.PyFunction):
        # A class written in a .py file has the function itself, with its file's globals;
        # a module parsed from text has only the source.
        defined = getattr(type(self), name, None)
        if getattr(defined, "__relax_kind__", None) != "python":
            defined = python_function(func)
        bound = types.MethodType(defined, self)

        def call(*args, **kwargs):
            framework = framework_of(list(args) + list(kwargs.values()))
            return to_framework(bound(*args, **kwargs), framework)

        call.__name__ = name
        return call

    # -- calls from inside Python functions ----------------------------------------------------
    def call_tir(self, tir_func, args, out_sinfo=None, tir_vars=(), *, out_ty=None):
        """Runs a PrimFunc of the module on `args` into new outputs shaped as `out_sinfo`
        (an R.Tensor, or a list of them for a tuple of outputs). `out_ty` is TVM's name for
        it; `tir_vars` are the integers passed after the outputs (R.call_tir's tir_vars)."""
        function = self._tir_function(tir_func)
        what = f"call_tir({function.name})"
        args = list(args) if isinstance(args, (list, tuple)) else [args]
        arrays = to_numpy(args)
        scalars = tuple(int(value) for value in tir_vars)
        infos, many = output_infos(out_sinfo if out_sinfo is not None else out_ty, what)
        check_arity(function.prim_func, len(arrays), len(infos), function.name, what, len(scalars))
        sizes = bind_sizes(function.prim_func, arrays, what, scalars, len(infos))
        outputs = allocate(infos, sizes, what)
        check_outputs(function.prim_func, infos, outputs, sizes, what, first=len(arrays))
        function.kernel(*arrays, *outputs, *scalars)
        return to_framework(tuple(outputs) if many else outputs[0], framework_of(args))

    def call_dps_packed(self, func_name: str, args, out_sinfo=None, *, out_ty=None):
        """Calls `func_name` of the PackedFunc registry (relax.runtime.register_func) with
        `args` followed by new outputs shaped as `out_sinfo`, which it fills."""
        what = f"call_dps_packed({func_name!r})"
        func = get_global_func(func_name, allow_missing=True) if isinstance(func_name, str) else None
        if func is None:
            raise UserError(f"{what}: no function '{func_name}' is registered; register one with "
                            f"relax.runtime.register_func(\"{func_name}\")")
        args = list(args) if isinstance(args, (list, tuple)) else [args]
        infos, many = output_infos(out_sinfo if out_sinfo is not None else out_ty, what)
        outputs = allocate(infos, {}, what)
        func(*to_numpy(args), *outputs)
        return to_framework(tuple(outputs) if many else outputs[0], framework_of(args))

    def call_py_func(self, func_name: str, args):
        """Calls the module's Python function `func_name` with `args` (TVM's spelling)."""
        if func_name not in self.python_functions:
            names = ", ".join(self.python_functions) or "none"
            raise UserError(f"no Python function '{func_name}' in the module (Python functions: {names})")
        return self.python_functions[func_name](*args)

    def script(self) -> str:
        """The module as TVMScript text, Python functions included."""
        from ..script import script

        return script(self.ir_mod)

    def _tir_function(self, tir_func) -> TirFunction:
        found = getattr(self, tir_func, None) if isinstance(tir_func, str) else tir_func
        if not isinstance(found, TirFunction):
            names = ", ".join(name for name, value in vars(self).items() if isinstance(value, TirFunction))
            raise UserError(f"call_tir: {tir_func!r} is not a TIR function of the module "
                            f"(TIR functions: {names or 'none'})")
        return found


def bind_class(cls, mod: ir.IRModule):
    """An `@I.ir_module` class that subclasses BasePyModule: `cls.ir_mod` is its module and
    `cls(device, target)` builds an instance of it."""
    cls.ir_mod = mod
    if "__init__" not in vars(cls):
        def __init__(self, device="cpu", target=None):
            BasePyModule.__init__(self, type(self).ir_mod, device, target)

        cls.__init__ = __init__
    return cls


def _kernels_public(mod: ir.IRModule) -> ir.IRModule:
    """The module with every PrimFunc public: Python functions call kernels by name, which
    dead-code elimination cannot see, so none may be dropped as unreachable."""
    for name, func in mod.functions.items():
        if isinstance(func, ir.tir.PrimFunc) and "global_symbol" not in func.attrs:
            attrs = ir.FrozenDict({**func.attrs, "global_symbol": name})
            mod = mod.with_function(name, dataclasses.replace(func, attrs=attrs))
    return mod
