"""as_pyfunc: Relax functions as the source of equivalent Python functions (`@I.py_func`).

    text = mod.as_pyfunc("main")                    # numpy
    text = mod.as_pyfunc("main", backend="torch")   # torch / torch.nn.functional
    text = module_as_pyfunc(mod)                    # what `relaxc --emit pyfunc` prints

It sits beside script/ (which prints a module as TVMScript): the writer (writer.py) turns
the bindings into statements, an operator table per backend (numpy_ops.py, torch_ops.py)
turns each high-level operator into an expression, and values.py writes sizes, struct
info and constants. Kernel calls, packed calls and calls of other Relax functions become
the `self.call_tir(...)`, `self.call_dps_packed(...)` and `self.f(...)` forms of
relax.BasePyModule, so a converted function runs inside the module it came from, at any
stage up to legalization and fusion (when most of it is call_tir).

Choices, stated once:
- An operator without a row in the table is refused, naming it; legalize-ops turns it
  into a call_tir, which always converts.
- Constants are written into the function: scalars and small tensors as literals, larger
  ones as their exact bytes (base64), so the text needs nothing else to run.
- A module lowered to the VM form (explicit allocations, builtins) is refused: it has no
  operator-level program left.
"""

from __future__ import annotations

from ..diagnostics import UserError


def backend_table(backend: str):
    """The operator table of a backend name: "numpy" or "torch"."""
    if backend == "numpy":
        from .numpy_ops import NUMPY

        return NUMPY
    if backend == "torch":
        from .torch_ops import TORCH

        return TORCH
    raise UserError(f"as_pyfunc: unknown backend '{backend}' (numpy, torch)")


def as_pyfunc(mod, name: str, backend: str = "numpy") -> str:
    """The source of a `@I.py_func` method computing what the Relax function `name` does."""
    from .writer import FunctionWriter

    return FunctionWriter(normalized(mod), backend_table(backend)).write(name)


def normalized(mod):
    """`mod` in normal form: every call's attributes complete (defaults filled in), nested
    calls bound to variables, struct info on every variable; what the tables read."""
    from ..ir.pass_infra import run_passes

    return run_passes(mod, ["normalize"])


def convert_module(mod, backend: str = "numpy"):
    """The module with every Relax function replaced by its Python function (a PyFunction
    node holding the source); TIR functions are kept, since `self.call_tir` calls them."""
    from ..ir import expr as rx
    from ..ir.module import IRModule
    from ..ir.node import FrozenDict
    from .writer import FunctionWriter

    functions, mod, table = {}, normalized(mod), backend_table(backend)
    for name, func in mod.functions.items():
        if isinstance(func, rx.Function):
            # a PyFunction's source is its lines without a final newline, as the parser keeps it
            func = rx.PyFunction(name, FunctionWriter(mod, table).write(name).rstrip("\n"))
        functions[name] = func
    return IRModule(FrozenDict(functions), mod.attrs, mod.global_infos, span=mod.span)


def module_as_pyfunc(mod, backend: str = "numpy") -> str:
    """The converted module as TVMScript text (`class Module(BasePyModule):`)."""
    from ..script import script

    return script(convert_module(mod, backend))
