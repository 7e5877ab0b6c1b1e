"""The Python-function table of an executable, from the module it is generated from.

Every PyFunction of the module is embedded with its source (relaxc puts them in the
artifact; a VM runs them only when allowed), and every name that the lowered Relax code
calls through `vm.builtin.call_py_func(("f", args))` is marked called, whether or not
the module holds its source: the VM must bind each called name before it runs.
"""

from __future__ import annotations

from ...ir import expr as rx
from ...ir.analysis import collect
from ..bytecode.py_functions import PyFunctionEntry

CALL_PY_FUNC = "vm.builtin.call_py_func"


def _called_name(node) -> str | None:
    """The function name of a lowered R.call_py_func, or None for any other node."""
    if not (isinstance(node, rx.Call) and isinstance(node.op, rx.ExternFunc) and node.op.global_symbol == CALL_PY_FUNC):
        return None
    packed = node.args[0] if node.args else None
    if isinstance(packed, rx.Tuple) and packed.fields and isinstance(packed.fields[0], rx.StringImm):
        return packed.fields[0].value
    return None


def py_function_entries(mod) -> tuple[PyFunctionEntry, ...]:
    sources = {name: func.source for name, func in mod.functions.items() if isinstance(func, rx.PyFunction)}
    called = set()
    for func in mod.relax_functions().values():
        called.update(name for name in map(_called_name, collect(func, lambda n: _called_name(n) is not None)))
    names = sorted(set(sources) | called)
    return tuple(PyFunctionEntry(name, name in called, sources.get(name)) for name in names)
