"""A PyFunction's source text as a Python function, for a module parsed from text.

The source runs in a namespace holding what a Python function of a TVMScript module
may name without importing it: the dialects (`R.Tensor(...)` for out_sinfo), numpy
as `np`, and PyTorch as `torch` and `F` (torch.nn.functional) when the source names
them and torch is importable. Annotations are not evaluated (`x: torch.Tensor` does
not need torch), and the code keeps the line numbers of the file it came from, so
a traceback points at the right line.
"""

from __future__ import annotations

import __future__
import ast
import importlib

import numpy as np

from .. import ir
from ..diagnostics import UserError

_OPTIONAL = {"torch": "torch", "F": "torch.nn.functional"}


def python_function(func: ir.PyFunction):
    """The function object that `func.source` defines (still to be bound to an instance)."""
    from ..script.python_dialects import I, R, T

    namespace = {"I": I, "R": R, "T": T, "np": np, "numpy": np}
    tree = ast.parse(func.source)
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    for name in names & _OPTIONAL.keys():
        try:
            namespace[name] = importlib.import_module(_OPTIONAL[name])
        except ImportError:
            pass  # the function fails with a NameError only if it reaches that name
    # The span is the `def` line; the source starts at the decorator above it.
    decorator_lines = next((i for i, text in enumerate(func.source.split("\n")) if text.startswith("def ")), 0)
    line = max(func.span.line - decorator_lines, 1) if func.span is not None else 1
    source_name = func.span.source if func.span is not None else f"<py_func {func.name}>"
    code = compile("\n" * (line - 1) + func.source, source_name, "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    exec(code, namespace)  # noqa: S102 -- the module's own Python function, which the user asked to run
    function = namespace.get(func.name)
    if not callable(function):
        raise UserError(f"the source of Python function '{func.name}' does not define it")
    return function
