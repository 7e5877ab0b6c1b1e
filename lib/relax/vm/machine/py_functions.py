"""R.call_py_func at run time: binding the Python functions an executable calls.

The bytecode calls `vm.builtin.call_py_func(("f", (x, ...)))`, as TVM lowers it. A VM
binds every name its executable marks called (bytecode/py_functions.py) when it is made,
and refuses to start if one stays unbound, so nothing runs half-way. A name binds to,
in order:

1. `py_functions={name: callable}` given to the VirtualMachine (what a Python user or
   relax.BasePyModule passes for the module's own functions);
2. a function registered at run time under that name (relax.runtime.register_func, as a
   `relaxrun --plugin FILE.py` file does);
3. only with `allow_python=True` (`relaxrun --allow-python`, `relax.load(...,
   allow_python=True)`): the source relaxc embedded in the artifact. It is exec'd with
   its decorators dropped, in a namespace holding numpy (`np`, `numpy`); its `self` is
   a PyFunctionSelf over the running VM.

Artifacts never run Python that came inside them otherwise: the source is data until
the user says so. The runtime never imports the compiler, so `self.call_tir` takes its
outputs as (shape, dtype) pairs or objects with `shape`/`dtype` (numpy-like), or, where
relax.script is importable, R.Tensor struct info with static sizes.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from typing import Callable

import numpy as np

from ...diagnostics import UserError
from ...runtime.errors import VMError
from ...runtime.registry import get_global_func

CALL_PY_FUNC = "vm.builtin.call_py_func"
WAYS = ("register a function under that name (relaxrun --plugin FILE.py, relax.runtime.register_func, "
        "relax.load(..., plugins=[...])) or run the source embedded in the artifact "
        "(relaxrun --allow-python, allow_python=True)")


class UnboundPythonFunction(UserError):
    """An executable calls a Python function that nothing binds (refused before running)."""


def run_plugin(path: str) -> None:
    """Runs a Python file the user names; what it registers (relax.runtime.register_func,
    `@register_func` on a function registers it under its own name) binds R.call_py_func."""
    if not os.path.isfile(path):
        raise UserError(f"plugin '{path}': no such file")
    name = "relax_plugin_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"plugin '{path}': not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except UserError:
        raise
    except Exception as error:  # noqa: BLE001 - the user's code failing is a user error
        raise UserError(f"plugin '{path}' failed: {type(error).__name__}: {error}") from None


def compile_source(name: str, source: str) -> Callable:
    """The function `name` that `source` defines (one `def`, decorators dropped: they
    belong to TVMScript, not to the running function)."""
    try:
        tree = ast.parse(source, filename=f"<python function '{name}'>")
    except SyntaxError as error:
        raise UserError(f"the embedded source of Python function '{name}' does not parse: {error}") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != name:
        raise UserError(f"the embedded source of Python function '{name}' is not one 'def {name}(self, ...)'")
    tree.body[0].decorator_list = []
    namespace = {"np": np, "numpy": np, "__name__": f"relax_py_func_{name}"}
    exec(compile(tree, f"<python function '{name}'>", "exec"), namespace)  # noqa: S102 - the user allowed it
    return namespace[name]


def _output(info):
    """A numpy array for one output description: (shape, dtype), an object with
    shape/dtype, or struct info with static sizes (R.Tensor((2, 3), "float32"))."""
    if isinstance(info, tuple) and len(info) == 2 and isinstance(info[1], str):
        shape, dtype = info
    else:
        shape = getattr(info, "shape_values", None) or getattr(info, "shape", None)
        dtype = getattr(info, "dtype", None)
    try:
        dims = tuple(int(getattr(dim, "value", dim)) for dim in shape)
        return np.empty(dims, dtype=np.dtype(str(dtype)))
    except (TypeError, ValueError):
        raise UserError(f"cannot allocate an output for {info!r}: give (shape, dtype) with static sizes") from None


def _outputs(out_sinfo) -> list:
    fields = getattr(out_sinfo, "fields", None)
    if isinstance(out_sinfo, list) or fields is not None:
        return [_output(info) for info in (out_sinfo if isinstance(out_sinfo, list) else fields)]
    return [_output(out_sinfo)]


class PyFunctionSelf:
    """`self` of an embedded Python function run by a VM: the VM's Relax functions and
    the other bound Python functions as methods, and the two DPS calls of the design."""

    def __init__(self, vm, bindings: "PyFunctionBindings"):
        self._vm = vm
        self._bindings = bindings

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._bindings.table:
            return self._bindings.table[name]
        if self._vm._function(name) is not None:
            return self._vm[name]
        raise AttributeError(f"the module has no Relax or Python function '{name}'")

    def _dps(self, func: Callable, args, out_sinfo):
        outputs = _outputs(out_sinfo)
        func(*args, *outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def call_tir(self, tir_func, args, out_sinfo):
        name = tir_func if isinstance(tir_func, str) else (
            getattr(tir_func, "name_hint", None) or getattr(tir_func, "name", None) or getattr(tir_func, "__name__", ""))
        kernel = self._vm._resolve(name)
        if kernel is None:
            raise VMError(f"call_tir: no compiled TIR function '{name}'")
        return self._dps(kernel, args, out_sinfo)

    def call_dps_packed(self, func_name: str, args, out_sinfo):
        func = get_global_func(func_name, allow_missing=True)
        if func is None:
            raise VMError(f"call_dps_packed: packed function '{func_name}' is not registered")
        return self._dps(func, args, out_sinfo)


def _as_array(value, name: str):
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    if isinstance(value, (np.generic, int, float, bool)) or hasattr(value, "__array__"):
        return np.asarray(value)
    raise VMError(f"Python function '{name}' returned a {type(value).__name__}, not a tensor")


class PyFunctionBindings:
    """The VM's name -> callable table for vm.builtin.call_py_func."""

    def __init__(self, vm, exe, allow_python: bool, explicit: dict | None):
        self.table: dict[str, Callable] = dict(explicit or {})
        sources = {entry.name: entry.source for entry in exe.py_functions if entry.source is not None}
        for entry in exe.py_functions:
            if entry.name in self.table:
                continue
            found = get_global_func(entry.name, allow_missing=True)
            if found is None and allow_python and entry.name in sources:
                found = self._embedded(vm, entry.name, sources[entry.name])
            if found is not None:
                self.table[entry.name] = found
        missing = [entry.name for entry in exe.py_functions if entry.called and entry.name not in self.table]
        if missing:
            names = ", ".join(f"'{name}'" for name in missing)
            plural = "s" if len(missing) > 1 else ""
            why = " (allowed, but the artifact embeds no source for it)" if allow_python else ""
            raise UnboundPythonFunction(f"the executable calls the Python function{plural} {names} (R.call_py_func), which "
                                        f"nothing binds{why}: {WAYS}")

    def _embedded(self, vm, name: str, source: str) -> Callable:
        function = compile_source(name, source)
        owner = PyFunctionSelf(vm, self)

        def bound(*args):
            return function(owner, *args)

        bound.__name__ = name
        return bound

    def __call__(self, packed):
        """vm.builtin.call_py_func(("f", args)): the bound function's result as arrays; one
        that shares memory with an argument is copied (the VM may reuse that storage)."""
        name, args = packed[0], tuple(packed[1])
        function = self.table.get(name) or get_global_func(name, allow_missing=True)
        if function is None:
            raise VMError(f"Python function '{name}' is not bound: {WAYS}")
        result = function(*args)
        many = isinstance(result, (tuple, list))
        arrays = tuple(_as_array(value, name) for value in (result if many else (result,)))
        arrays = tuple(a.copy() if any(np.may_share_memory(a, arg) for arg in args if isinstance(arg, np.ndarray))
                       else a for a in arrays)
        return arrays if many else arrays[0]


def _registered_only(packed):
    """vm.builtin.call_py_func outside a VM's own binding (it has none): the registry alone."""
    name = packed[0]
    function = get_global_func(name, allow_missing=True)
    if function is None:
        raise VMError(f"Python function '{name}' is not bound: {WAYS}")
    return function(*packed[1])


PY_FUNC_BUILTINS = {CALL_PY_FUNC: _registered_only}
