"""`from relax.script import I, R, T`: the dialects as Python objects, for a module
written in a real .py file and run by Python.

    from relax.script import I, R, T
    from relax import BasePyModule

    @I.ir_module
    class M(BasePyModule):
        @T.prim_func
        def add_one(...): ...
        @I.py_func
        def main(self, x):
            return self.call_tir(self.add_one, [x], out_sinfo=R.Tensor((x.shape[0],), "float32"))

    m = M("cpu")

`@I.ir_module` reads the class's own source text (inspect) with the TVMScript parser,
the one that reads .relax files, so a class means the same thing in either place. A
subclass of BasePyModule stays a class, instantiated as `M(device, target)`; any other
class becomes its IRModule. Python still evaluates the class body before the decorator
runs: decorators and annotations (`T.handle`, `R.Tensor(("n", 4), "float32")`) only
have to evaluate, so names the runtime has no use for evaluate to an Annotation, which
records what it spells and nothing more. `R.Tensor`, `R.Tuple`, `R.Shape`, `R.Object`
and `R.Prim` give real struct info: `out_sinfo=` of `self.call_tir` reads it.
"""

from __future__ import annotations

import inspect
import operator
import sys
import textwrap

from .. import ir
from ..diagnostics import UserError
from ..ir import tir


class Annotation:
    """The value of a TVMScript spelling that Python evaluates but the runtime never reads
    (`T.handle`, `T.Buffer((n, 4), "float32")`, `n = T.int64()`): the text parser reads
    the source instead. It takes any call, attribute, subscript or arithmetic."""

    def __init__(self, text: str):
        self.text = text

    def __getattr__(self, name: str):
        if name.startswith("__"):  # copy, pickle and inspect probe dunders: they are absent
            raise AttributeError(name)
        return Annotation(f"{self.text}.{name}")

    def __call__(self, *args, **kwargs):
        return Annotation(f"{self.text}(...)")

    def __getitem__(self, key):
        return Annotation(f"{self.text}[...]")

    def _arithmetic(self, *other):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _arithmetic
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = __rmod__ = __neg__ = _arithmetic

    def __repr__(self) -> str:
        return f"<annotation {self.text}>"


class _Dialect:
    """A dialect namespace: its own methods, and an Annotation for any other name."""

    prefix = ""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return Annotation(f"{self.prefix}.{name}")


def _marking(kind: str):
    """A decorator usable bare (`@R.function`) or with options (`@R.function(pure=False)`)
    that tags the function with the dialect it belongs to and returns it unchanged."""

    def decorator(func=None, **options):
        def mark(function):
            function.__relax_kind__ = kind
            return function

        return mark(func) if callable(func) else mark

    return decorator


def _prim_expr(dim):
    """A size as a PrimExpr: an int (numpy's too), a symbolic name, or a PrimExpr; else None."""
    if isinstance(dim, str):
        return tir.Var(dim, "int64")
    if isinstance(dim, tir.PrimExpr):
        return dim
    if isinstance(dim, bool):
        return None
    try:
        return tir.IntImm("int64", operator.index(dim))
    except TypeError:
        return None


class RelaxDialect(_Dialect):
    prefix = "R"
    function = staticmethod(_marking("relax"))

    @staticmethod
    def Tensor(shape=None, dtype="void", ndim: int = -1, vdevice=None):  # noqa: N802 (TVMScript's name)
        """`R.Tensor((n, 20), "float32")`: sizes are ints, names of symbolic sizes, or PrimExprs."""
        if isinstance(shape, str) and dtype == "void":  # R.Tensor("float32"): a dtype only
            shape, dtype = None, shape
        if shape is None:
            return ir.TensorStructInfo(None, dtype, ndim)
        dims = [_prim_expr(dim) for dim in shape]
        if any(dim is None for dim in dims):
            return Annotation("R.Tensor(...)")  # sizes that only the text parser reads
        return ir.TensorStructInfo(ir.ShapeExpr(tuple(dims)), dtype)

    @staticmethod
    def Tuple(*fields):  # noqa: N802
        if len(fields) == 1 and isinstance(fields[0], (list, tuple)):
            fields = tuple(fields[0])
        return ir.TupleStructInfo(tuple(fields))

    @staticmethod
    def Shape(values=None, ndim: int = -1):  # noqa: N802
        dims = None if values is None else tuple(_prim_expr(dim) for dim in values)
        return ir.ShapeStructInfo(dims, ndim if dims is None else len(dims))

    @staticmethod
    def Object():  # noqa: N802
        return ir.ObjectStructInfo()

    @staticmethod
    def Prim(dtype="void", value=None):  # noqa: N802
        return ir.PrimStructInfo(dtype)


class TirDialect(_Dialect):
    prefix = "T"
    prim_func = staticmethod(_marking("tir"))


class IrDialect(_Dialect):
    prefix = "I"
    py_func = pyfunc = staticmethod(_marking("python"))

    @staticmethod
    def ir_module(cls):
        """The IRModule that the class's source spells; for a BasePyModule subclass, the
        class itself, bound to that module (`M("cpu")` builds and instantiates it)."""
        if not inspect.isclass(cls):
            raise UserError(f"@I.ir_module decorates a class, not {type(cls).__name__}")
        mod = parse_class(cls)
        if any(base.__name__ == "BasePyModule" for base in cls.__mro__[1:]):
            from ..py_module.base_py_module import bind_class

            return bind_class(cls, mod)
        return mod


I, R, T = IrDialect(), RelaxDialect(), TirDialect()


def parse_class(cls) -> ir.IRModule:
    """The IRModule of a class defined in a Python file, read from its source text.

    Lines keep their numbers in the file, so a parse error points at the file's line."""
    from .parser import parse_module

    try:
        lines, first_line = inspect.getsourcelines(cls)
        source_name = inspect.getsourcefile(cls) or f"<class {cls.__name__}>"
    except (OSError, TypeError):
        raise UserError(f"the source of class '{cls.__name__}' is not available to read; define it in a .py "
                        "file, or parse its text with relax.script.parse") from None
    header = _alias_header(sys.modules.get(cls.__module__))
    padding = max(first_line - 1, 0)
    # The import line takes the place of one of the blank lines that keep the numbering.
    prefix = ([header] + [""] * (padding - 1)) if header and padding else [""] * padding
    text = "\n".join(prefix) + ("\n" if prefix else "") + textwrap.dedent("".join(lines))
    return parse_module(text, source_name)


def _alias_header(module) -> str | None:
    """`from relax.script import R as Rx` for each name under which the class's file
    imported a dialect other than its usual letter."""
    if module is None:
        return None
    letters = {id(I): "I", id(R): "R", id(T): "T"}
    aliases = [f"{letters[id(value)]} as {name}" for name, value in vars(module).items()
               if id(value) in letters and name != letters[id(value)]]
    return f"from relax.script import {', '.join(aliases)}" if aliases else None
