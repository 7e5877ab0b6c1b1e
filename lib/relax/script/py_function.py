"""`@I.py_func` methods of a `class Module(BasePyModule):` as PyFunction nodes.

A Python function is not parsed as Relax or TIR: it runs in Python (relax.BasePyModule
binds it as a method), so the node keeps its source text exactly as written, decorator
and `def` line included, dedented to column 0. The printer writes it back indented
inside the class, which makes the round trip exact. Only a module whose class
subclasses `BasePyModule` may hold Python functions (TVM's rule); elsewhere the
decorator is a located error.
"""

from __future__ import annotations

import ast

from .. import ir
from .context import ParseContext

# TVM's design spells the decorator `I.py_func`; TVM 0.27's parser registers `I.pyfunc`.
PY_FUNC_DECORATORS = ("py_func", "pyfunc")
BASE_CLASS = "BasePyModule"


def is_py_func_decorator(ctx: ParseContext, decorator: ast.expr) -> bool:
    return any(ctx.dialect_of(decorator) == ("ir", name) for name in PY_FUNC_DECORATORS)


def subclasses_base_py_module(class_def: ast.ClassDef | None) -> bool:
    """Whether the class lists BasePyModule (`BasePyModule`, `relax.BasePyModule`, ...) as a base."""
    if class_def is None:
        return False
    return any((isinstance(base, ast.Name) and base.id == BASE_CLASS)
               or (isinstance(base, ast.Attribute) and base.attr == BASE_CLASS)
               for base in class_def.bases)


def parse_py_function(ctx: ParseContext, func_def: ast.FunctionDef, class_def: ast.ClassDef | None) -> ir.PyFunction:
    """The PyFunction of `func_def`, whose single decorator is @I.py_func."""
    decorator = func_def.decorator_list[0]
    if not subclasses_base_py_module(class_def):
        where = f"class '{class_def.name}' does not" if class_def is not None else "this function is not in a class that"
        notes = (ctx.note(f"declare it as `class {class_def.name}({BASE_CLASS}):`", class_def),) if class_def else ()
        raise ctx.fail(f"@I.py_func is only allowed in a module that subclasses {BASE_CLASS}; "
                       f"{where} subclass it", decorator, notes)
    params = func_def.args.posonlyargs + func_def.args.args
    if not params or params[0].arg != "self":
        raise ctx.fail(f"Python function '{func_def.name}' must take `self` as its first parameter",
                       params[0] if params else func_def)
    return ir.PyFunction(func_def.name, _source_text(ctx, func_def), span=ctx.span(func_def))


def _source_text(ctx: ParseContext, func_def: ast.FunctionDef) -> str:
    """The lines of `func_def` (decorators first) with the class body's indentation removed."""
    first = min([func_def.lineno] + [d.lineno for d in func_def.decorator_list])
    lines = ctx.lines[first - 1:func_def.end_lineno]
    prefix = lines[0][:len(lines[0]) - len(lines[0].lstrip())]
    # A line that does not start with the prefix (a blank line, the inside of a string
    # literal) is kept as it is; whitespace-only lines print back empty.
    return "\n".join("" if not line.strip() else line[len(prefix):] if line.startswith(prefix) else line
                     for line in lines)
