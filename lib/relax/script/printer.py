"""IR -> TVMScript text in TVM 0.27's style: `script(node)` for any node.

A module prints as TVM's `mod.script()` does: the `# from tvm.script import ...`
comments of the dialects used, the module-level `TypeVar`s of symbolic signature
variables, then `@I.ir_module class Module:` with Python functions (`@I.py_func`,
printed verbatim, and then the class is `Module(BasePyModule)`) first, PrimFuncs
next, Relax functions after them and `main` last (each group by name). Functions, expressions, struct info,
statements and buffers print on their own as TVM's repr of them does. The text
always ends with one newline.

The work is split by dialect: printer_relax (functions, bindings, expressions),
printer_struct_info, printer_tir (PrimFuncs and statements), printer_tir_block
(T.sblock), printer_prim_expr, printer_values (shared helpers), printer_arrays (tensor literals)
and printer_doc (literals and precedence); printer_context holds names in scope, and
printed_bindings where the Relax bindings land in the text.
"""

from __future__ import annotations

from .. import ir
from ..ir import tir
from ..ir.struct_info import StructInfo
from .printer_context import PrintContext
from .printer_relax import EMPTY_COMMENT, RelaxPrinter
from .printer_tir import TirPrinter
from .printer_values import indent


def script(node, printed_params: dict | None = None, printed_bindings=None) -> str:
    """`node` as TVMScript text, ending with a newline. `printed_params`, when given, is
    filled with each PrimFunc's name -> (the names its parameters print as, a buffer
    parameter under its buffer's; the (buffer, name)s of the buffers printed under another
    name than their own, where names clash in a scope or are not identifiers), or None
    for one where something else printed under another name: what the text reads back
    as, for a reader that keeps the IR it printed (driver/printed_kernels.py). None too
    for one with an expression that reads back as another (`x % 1` reads back as 0:
    printer_prim_expr.py). `printed_bindings` (a printed_bindings.PrintedBindings), when
    given with a module, is filled with where the module's Relax bindings print, and left
    incomplete when a Relax expression reads back as another."""
    ctx = PrintContext()
    ctx.printed_params = printed_params
    if isinstance(node, ir.IRModule):
        ctx.printed_bindings = printed_bindings
        body = _module(ctx, node)
        if printed_bindings is not None:
            text = printed_bindings.unmark(_join(_wrap_header(ctx, body)))
            # A Relax expression that reads back as another: the bytecode comes from the text.
            printed_bindings.complete = printed_bindings.complete and not ctx.reads_back_folded
            return text
    elif isinstance(node, (ir.Function, tir.PrimFunc)):
        body = _function(ctx, node, _standalone_name(node), RelaxPrinter(ctx), TirPrinter(ctx))
        body = _type_var_lines(ctx) + body
    else:
        body = _fragment(ctx, node)
        return _join(body)
    return _join(_wrap_header(ctx, body))


def _standalone_name(func) -> str:
    return func.attrs.get("global_symbol") or "main"


def _function(ctx, func, name: str, relax: RelaxPrinter, tir_printer: TirPrinter) -> list[str]:
    if isinstance(func, tir.PrimFunc):
        return tir_printer.prim_func(func, name)
    if isinstance(func, ir.PyFunction):
        return func.source.split("\n")  # verbatim: the source as written, dedented
    return relax.function(func, name, top_level=True)


def _sort_key(item):
    name, func = item
    if name == "main":
        return (1000, name)
    # Python functions first, as TVM's BasePyModule.script() inserts them.
    return (0 if isinstance(func, ir.PyFunction) else 1 if isinstance(func, tir.PrimFunc) else 3, name)


def _module(ctx: PrintContext, module: ir.IRModule) -> list[str]:
    ctx.in_module = True
    ctx.module_name = "Module"
    ctx.taken.add("Module")
    relax, tir_printer = RelaxPrinter(ctx), TirPrinter(ctx)
    body: list[str] = []
    if module.attrs:
        body.append(f"{ctx.ir('module_attrs')}({relax.attr(module.attrs)})")
    if module.global_infos:
        body.append(f"{ctx.ir('module_global_infos')}({relax.attr(module.global_infos)})")
    functions = sorted(module.functions.items(), key=_sort_key)
    if ctx.printed_bindings is not None:
        ctx.printed_bindings.order = tuple(name for name, _ in functions)
    for name, func in functions:
        body.extend(_function(ctx, func, name, relax, tir_printer))
        body.append("")
    lines = _type_var_lines(ctx)
    lines.append(f"@{ctx.ir('ir_module')}")
    # Only a BasePyModule may hold Python functions (script/py_function.py).
    has_python = any(isinstance(func, ir.PyFunction) for func in module.functions.values())
    lines.append(f"class {ctx.module_name}(BasePyModule):" if has_python else f"class {ctx.module_name}:")
    lines.extend(indent(body) or ["    pass"])
    return lines


def _type_var_lines(ctx: PrintContext) -> list[str]:
    return [f'{name} = TypeVar("{name}")' for name in ctx.type_vars]


def _wrap_header(ctx: PrintContext, body: list[str]) -> list[str]:
    header = ctx.header_lines()
    if not header:
        return body
    return header + [""] + body


def _fragment(ctx: PrintContext, node) -> list[str]:
    """A node that is not a function: an expression, struct info, statement or buffer."""
    relax, tir_printer = RelaxPrinter(ctx), TirPrinter(ctx)
    if isinstance(node, StructInfo):
        return [relax.body_info.print(node)]
    if isinstance(node, tir.PrimExpr):
        return [tir_printer.expr(node)]
    if isinstance(node, tir.Buffer):
        return [f"{ctx.define(node, node.name)} = {tir_printer.buffer_call('Buffer', node)}"]
    if isinstance(node, tir.Stmt):
        return tir_printer.stmt(node)
    if isinstance(node, tir.BufferRegion):
        return [tir_printer.region(node)]
    if isinstance(node, tir.Range):
        stop = tir_printer.expr(tir.Add(node.min, node.extent)) if not _is_zero(node.min) else tir_printer.expr(node.extent)
        return [f"{ctx.ir('Range')}({tir_printer.expr(node.min)}, {stop})"]
    if isinstance(node, tir.IterVar):
        name = tir_printer.expr(node.var)
        dom = script(node.dom).strip() if node.dom is not None else "None"
        return [f'{ctx.tir("iter_var")}({name}, {dom}, "{node.iter_type}", "{node.thread_tag}")']
    if isinstance(node, (ir.Binding,)):
        return relax.binding(node)
    if isinstance(node, ir.BindingBlock):
        return relax.block(node)
    if isinstance(node, ir.SeqExpr):
        return relax.seq_expr(node, use_return=False)
    if isinstance(node, ir.If):
        return relax.if_lines(node, None)
    if isinstance(node, ir.Expr):
        return [relax.expr(node)]
    raise TypeError(f"cannot print {type(node).__name__} as TVMScript")


def _is_zero(expr) -> bool:
    return isinstance(expr, tir.IntImm) and expr.value == 0


def _join(lines: list[str]) -> str:
    text = "\n".join(lines).replace(EMPTY_COMMENT, "").rstrip()
    return text + "\n"
