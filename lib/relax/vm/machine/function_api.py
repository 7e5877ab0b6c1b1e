"""The VirtualMachine's Python API: functions by name, called with numpy arrays and
Python values, with keyword arguments, and TVM's stateful and saved-function forms.

    vm["main"](x, y)                       vm.save_function("main", "bench", x, y); vm["bench"]()
    vm.set_input("main", x, y); vm.invoke_stateful("main"); vm.get_outputs("main")

A mixin of VirtualMachine (virtual_machine.py), which supplies `_function(name)`,
`_execute(function, args)` and the `_saved`, `_inputs` and `_outputs` tables.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...diagnostics import UserError
from ...runtime.objects import Closure, ShapeTuple
from .native_mode import NativeFunction


class FunctionAPI:
    def __getitem__(self, name: str) -> Callable:
        if name in self._saved:
            return self._saved[name]
        function = self._function(name)
        if function is None:
            raise UserError(f"no function '{name}' in the executable")
        index, native = function.index, self._native_call(function)

        def whole_path(*args, **kwargs):  # the function read at each call: set_instrument decodes it anew
            return self._call_from_python(self._bytecode[index], args, kwargs)

        call = whole_path
        if native is not None:
            # Arrays the native call takes as they are go straight to it: binding them first
            # (to_runtime, the argument count, _execute's dispatch) only hands the same
            # arrays on; anything else takes the whole path, from the caller's arguments.
            def call(*args, **kwargs):
                if kwargs or self._instrument is not None:
                    return whole_path(*args, **kwargs)
                return native.run(args, whole_path)

        call.__name__ = name
        return call

    def _native_call(self, function):
        """The function's native_mode.NativeFunction in compiled mode, else None."""
        entry = self._compiled[function.index] if self._compiled is not None else None
        return entry if isinstance(entry, NativeFunction) else None

    def _bind(self, function, args: tuple, kwargs: dict) -> tuple:
        if kwargs:
            names = list(function.param_names)
            bound = list(args) + [None] * (function.num_args - len(args))
            for key, value in kwargs.items():
                if key not in names:
                    raise UserError(f"function '{function.name}' has no parameter '{key}'")
                bound[names.index(key)] = value
            args = tuple(bound)
        if len(args) != function.num_args:
            params = f" ({', '.join(function.param_names)})" if function.param_names else ""
            raise UserError(f"function '{function.name}' takes {function.num_args} arguments{params}, "
                            f"got {len(args)}")
        return tuple(to_runtime(arg) for arg in args)

    def _call_from_python(self, function, args: tuple, kwargs: dict):
        return self._execute(function, self._bind(function, args, kwargs))

    def set_input(self, func_name: str, *args, **kwargs) -> None:
        function = self._require(func_name)
        self._inputs[func_name] = self._bind(function, args, kwargs)

    def invoke_stateful(self, func_name: str) -> None:
        function = self._require(func_name)
        if func_name not in self._inputs:
            raise UserError(f"no inputs set for '{func_name}'; call set_input first")
        self._outputs[func_name] = self._execute(function, self._inputs[func_name])

    def get_outputs(self, func_name: str):
        if func_name not in self._outputs:
            raise UserError(f"no outputs for '{func_name}'; call invoke_stateful first")
        return self._outputs[func_name]

    def save_function(self, func_name: str, saved_name: str, *args, include_return: bool = True, **kwargs):
        """Binds `args` to `func_name` once; `vm[saved_name]()` then runs it with no conversion."""
        function = self._require(func_name)
        bound = self._bind(function, args, kwargs)

        def saved():
            result = self._execute(self._bytecode[function.index], bound)
            return result if include_return else None

        self._saved[saved_name] = saved

    def get_function_arity(self, func_name: str) -> int:
        return self._require(func_name).num_args

    def get_function_param_name(self, func_name: str, index: int) -> str:
        function = self._require(func_name)
        if not 0 <= index < len(function.param_names):
            raise UserError(f"function '{func_name}' has no parameter name at index {index}")
        return function.param_names[index]

    def _require(self, func_name: str):
        function = self._function(func_name)
        if function is None:
            raise UserError(f"no function '{func_name}' in the executable")
        return function


def to_runtime(value):
    """A Python/numpy value as the VM holds it (C-contiguous arrays, ints, tuples)."""
    if isinstance(value, np.ndarray):
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    if isinstance(value, ShapeTuple) or isinstance(value, (str, Closure)) or value is None:
        return value
    if isinstance(value, tuple):
        return tuple(to_runtime(item) for item in value)
    if isinstance(value, list):
        return tuple(to_runtime(item) for item in value)
    if isinstance(value, np.generic):
        return value.item()
    return value
