"""Printing TIR: PrimFuncs, statements, schedulable blocks (`T.sblock`) and buffers.

Lines are returned without indentation; a nested body is indented by its parent.
Signature variables that no parameter defines (buffer shapes such as `n`) become
module-level `TypeVar`s, and compound shape expressions in a signature print as
strings (`T.Buffer(("n * m",), "float32")`), both as TVM 0.27 prints them.
"""

from __future__ import annotations

from ..ir import tir
from . import printer_doc as doc
from .printer_prim_expr import PrimExprPrinter, index_text
from .printer_tir_block import BlockPrinting, contains_block
from .printer_values import add_folded, attr_value, indent, is_true

_LOOP_KINDS = {"parallel": "parallel", "vectorized": "vectorized", "unrolled": "unroll", "serial": "serial"}
_SCOPED_ALLOC = {"local": "alloc_local", "shared": "alloc_shared"}


class TirPrinter(BlockPrinting):
    def __init__(self, ctx):
        self.ctx = ctx
        self.exprs = PrimExprPrinter(ctx, "int32", on_free_var=self._free_var)
        self.signature = PrimExprPrinter(ctx, "int32", on_free_var=self._free_var)
        self.loops: dict[object, tir.For] = {}
        self.declared: list | None = None  # the (name, var)s that the current declaration line declares
        self.type_vars: dict[str, tir.Var] = {}  # the current function's, by name

    def _free_var(self, var: tir.Var) -> str:
        """An undefined variable: an int64 size is a module-level TypeVar (which parses back
        as int64); another dtype is declared at the top of the function's body, so it keeps
        its dtype and stays the function's own."""
        if var.dtype == "int64" or self.declared is None:
            if self.type_vars.setdefault(var.name, var) is not var or var.name in self.ctx.taken:
                self.ctx.renamed.append((var, var.name))  # it reads back as another variable of that name
            return self.ctx.add_type_var(var, var.name)
        name = self.ctx.define(var, var.name)
        self.declared.append((name, var))
        return name

    def expr(self, node) -> str:
        return self.exprs.expr(node)

    # -- the function ---------------------------------------------------------------
    def prim_func(self, func: tir.PrimFunc, name: str) -> list[str]:
        ctx = self.ctx
        renames, self.type_vars = len(ctx.renamed), {}
        folded_before, ctx.reads_back_folded = ctx.reads_back_folded, False
        with ctx.signature_vars(), ctx.scope():
            declarations: list[str] = []
            params = [self._declaring(declarations, self._param, func, param) for param in func.params]
            names = tuple(param.split(":", 1)[0] for param in params)
            body: list[str] = []
            attrs = {k: v for k, v in func.attrs.items()
                     if not (k == "global_symbol" and v == name) and k != "s_tir"}
            if attrs:
                body.append(f"{ctx.tir('func_attr')}({attr_value(ctx, self.exprs, attrs)})")
            body.extend(self._declaring(declarations, self._function_body, func.body))
            body[:0] = declarations
            ret = f" -> {ctx.tir(func.ret_type)}" if func.ret_type not in (None, "void") else ""
            decorator = self._decorator(func)
            header = f"def {name}({', '.join(params)}){ret}:"
        if ctx.printed_params is not None:
            ctx.printed_params[name] = None if ctx.reads_back_folded else _printed_as(names, ctx.renamed[renames:])
        ctx.reads_back_folded = folded_before
        return [decorator, header] + indent(body or ["pass"])

    def _declaring(self, declarations: list[str], method, *args):
        """Runs method(*args), adding one line that declares the non-int64 variables it
        defined: `h, w = T.int32(), T.int32()`, one line per parameter as TVM 0.27 prints."""
        self.declared = []
        try:
            result = method(*args)
        finally:
            declared, self.declared = self.declared, None
        if declared:
            names = ", ".join(name for name, _ in declared)
            calls = ", ".join(self.ctx.tir(var.dtype) + "()" for _, var in declared)
            declarations.append(f"{names} = {calls}")
        return result

    def _decorator(self, func: tir.PrimFunc) -> str:
        options = []
        if "global_symbol" not in func.attrs:
            options.append("private=True")
        if func.attrs.get("s_tir") or contains_block(func.body):
            options.append("s_tir=True")
        text = "@" + self.ctx.tir("prim_func")
        return f"{text}({', '.join(options)})" if options else text

    def _param(self, func: tir.PrimFunc, param: tir.Var) -> str:
        buffer = func.buffer_of(param)
        if buffer is None:
            name = self.ctx.define(param, param.name)
            return f"{name}: {self.ctx.tir(param.dtype)}"
        name = self.ctx.define(buffer, buffer.name)
        self.ctx.define_alias(param, name)
        if buffer.data is not None:
            self.ctx.define_alias(buffer.data, f"{name}.data")
        return f"{name}: {self.buffer_call('Buffer', buffer, signature=True, dtype_always=True)}"

    # -- buffers ----------------------------------------------------------------------
    def buffer_call(self, method: str, buffer: tir.Buffer, signature=False, dtype_always=False, args=()) -> str:
        printer = self.signature if signature else self.exprs
        shape = [self._shape_dim(dim, printer, signature) for dim in buffer.shape]
        positional = list(args) + [doc.tuple_text(shape)]
        if dtype_always or buffer.dtype != "float32":
            positional.append(doc.string_text(buffer.dtype))
        kwargs = []
        if buffer.strides:
            kwargs.append(("strides", doc.tuple_text([printer.expr(s) for s in buffer.strides])))
        offset = buffer.elem_offset
        if offset is not None and not (isinstance(offset, tir.IntImm) and offset.value == 0):
            kwargs.append(("elem_offset", printer.expr(offset)))
        if buffer.scope != "global" and method not in _SCOPED_ALLOC.values():
            kwargs.append(("scope", doc.string_text(buffer.scope)))
        if buffer.align not in (0, 64):
            kwargs.append(("align", doc.int_text(buffer.align)))
        if buffer.offset_factor not in (0,):
            kwargs.append(("offset_factor", doc.int_text(buffer.offset_factor)))
        if buffer.axis_separators:
            kwargs.append(("axis_separators", doc.list_text([str(a) for a in buffer.axis_separators])))
        return doc.call(self.ctx.tir(method), positional, kwargs)

    def _shape_dim(self, dim, printer, signature: bool) -> str:
        if signature and not isinstance(dim, (tir.Var, tir.IntImm)):
            return doc.string_text(printer.expr(dim))
        if signature and isinstance(dim, tir.Var) and dim.dtype != "int64" and not self.ctx.is_defined(dim):
            # Its declaration follows the signature, so TVM 0.27 prints its first use as a string.
            return doc.string_text(printer.expr(dim))
        return printer.expr(dim)

    def _alloc_buffers(self, buffers, method_for_block: str | None = None) -> list[str]:
        """Allocations: a block's own (`T.sblock_alloc_buffer`) or statement-level ones."""
        lines = []
        for buffer in buffers:
            method = method_for_block or _SCOPED_ALLOC.get(buffer.scope, "alloc_buffer")
            text = self.buffer_call(method, buffer)
            name = self.ctx.define(buffer, buffer.name)
            if buffer.data is not None:
                self.ctx.define_alias(buffer.data, f"{name}.data")
            lines.append(f"{name} = {text}")
        return lines

    # -- statements -------------------------------------------------------------------
    def stmt(self, node) -> list[str]:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise TypeError(f"cannot print TIR statement {type(node).__name__}")
        return method(node)

    def _SeqStmt(self, node: tir.SeqStmt) -> list[str]:
        lines = []
        for item in node.seq:
            lines.extend(self.stmt(item))
        return lines

    def _BufferStore(self, node: tir.BufferStore) -> list[str]:
        if node.buffer in self.exprs.scalars:
            return [f"{self.exprs.buffer_name(node.buffer)} = {self.expr(node.value)}"]
        target = f"{self.exprs.buffer_name(node.buffer)}[{index_text(self.exprs.indices(node.indices))}]"
        return [f"{target} = {self.expr(node.value)}"]

    def _Evaluate(self, node: tir.Evaluate) -> list[str]:
        if isinstance(node.value, tir.Call) and node.value.op == "tir.ret" and len(node.value.args) == 1:
            return [f"return {self.expr(node.value.args[0])}"]
        if isinstance(node.value, (tir.IntImm, tir.FloatImm)):
            return [f"{self.ctx.tir('evaluate')}({self.expr(node.value)})"]
        return [self.expr(node.value)]

    def _IfThenElse(self, node: tir.IfThenElse) -> list[str]:
        lines = [f"if {self.expr(node.condition)}:"]
        with self.ctx.scope():
            lines += indent(self.stmt(node.then_case) or ["pass"])
        if node.else_case is not None:
            lines.append("else:")
            with self.ctx.scope():
                lines += indent(self.stmt(node.else_case) or ["pass"])
        return lines

    def _LetStmt(self, node: tir.LetStmt) -> list[str]:
        value = self.expr(node.value)
        name = self.ctx.define(node.var, node.var.name)
        return [f"{name}: {self.ctx.tir('let')}[{self.ctx.tir(node.var.dtype)}] = {value}"] + self.stmt(node.body)

    def _While(self, node: tir.While) -> list[str]:
        with self.ctx.scope():
            body = self.stmt(node.body)
        return [f"while {self.expr(node.condition)}:"] + indent(body or ["pass"])

    def _AssertStmt(self, node: tir.AssertStmt) -> list[str]:
        message = node.message.value if isinstance(node.message, tir.StringImm) else None
        if message is None:
            text = self.expr(node.message)
        else:
            text = f'("RuntimeError", [{doc.string_text(message)}])'
        return [f"assert {self.expr(node.condition)}, {text}"] + self.stmt(node.body)

    def _AttrStmt(self, node: tir.AttrStmt) -> list[str]:
        if node.attr_key == "thread_extent" and isinstance(node.node, tir.IterVar):
            name = self.ctx.define(node.node.var, node.node.var.name)
            head = doc.call(self.ctx.tir("launch_thread"), [doc.string_text(node.node.thread_tag), self.expr(node.value)])
            return [f"{name} = {head}"] + self.stmt(node.body)
        if isinstance(node.node, tir.IntImm) and node.node.value == 0:
            items, body = [], node
            while isinstance(body, tir.AttrStmt) and isinstance(body.node, tir.IntImm) and body.node.value == 0:
                items.append(f"{doc.string_text(body.attr_key)}: {self._attr_stmt_value(body.value)}")
                body = body.body
            with self.ctx.scope():
                lines = self.stmt(body)
            return [f"with {self.ctx.tir('attr')}({{{', '.join(items)}}}):"] + indent(lines or ["pass"])
        value = self.expr(node.value) if isinstance(node.value, tir.PrimExpr) else attr_value(self.ctx, self.exprs, node.value)
        if node.node is None:
            head = f"{self.ctx.tir('attr')}({{{doc.string_text(node.attr_key)}: {value}}})"
        else:
            target = self.expr(node.node) if isinstance(node.node, tir.PrimExpr) else attr_value(self.ctx, self.exprs, node.node)
            head = f"{self.ctx.tir('attr')}({target}, {doc.string_text(node.attr_key)}, {value})"
        with self.ctx.scope():
            body = self.stmt(node.body)
        return [f"with {head}:"] + indent(body or ["pass"])

    def _attr_stmt_value(self, value) -> str:
        if isinstance(value, tir.PrimExpr):
            return self.expr(value)
        return attr_value(self.ctx, self.exprs, value)

    def _Allocate(self, node: tir.Allocate) -> list[str]:
        declared = node.body
        if isinstance(declared, tir.DeclBuffer) and declared.buffer.data is node.buffer_var:
            buffer = declared.buffer
            if node.annotations.get(LOCAL_SCALAR) and _starts_with_store(declared.body, buffer):
                return self._local_scalar(buffer, declared.body)
            lines = self._alloc_buffers([buffer])
            return lines + self.stmt(declared.body)
        extents = doc.list_text([self.expr(e) for e in node.extents])
        args = [extents, doc.string_text(node.dtype), doc.string_text(node.scope)]
        kwargs = [] if is_true(node.condition) else [("condition", self.expr(node.condition))]
        text = doc.call(self.ctx.tir("allocate"), args, kwargs)
        name = self.ctx.define(node.buffer_var, node.buffer_var.name)
        return [f"{name} = {text}"] + self.stmt(node.body)

    def _local_scalar(self, buffer: tir.Buffer, body) -> list[str]:
        """`x: T.int32 = v`: a one-element local buffer that reads and writes as a name."""
        first, rest = _split_first(body)
        value = self.expr(first.value)
        name = self.ctx.define(buffer, buffer.name)
        self.exprs.scalars.add(buffer)
        lines = [f"{name}: {self.ctx.tir(buffer.dtype)} = {value}"]
        return lines + (self.stmt(rest) if rest is not None else [])

    def _DeclBuffer(self, node: tir.DeclBuffer) -> list[str]:
        buffer = node.buffer
        extra = []
        if buffer.data is not None and self.ctx.is_defined(buffer.data):
            extra = [("data", self.ctx.name_of(buffer.data))]
        text = self.buffer_call("decl_buffer", buffer)
        if extra:
            text = text[:-1] + (", " if not text.endswith("(") else "") + f"data={extra[0][1]})"
        name = self.ctx.define(buffer, buffer.name)
        if buffer.data is not None and not self.ctx.is_defined(buffer.data):
            self.ctx.define_alias(buffer.data, f"{name}.data")
        return [f"{name} = {text}"] + self.stmt(node.body)

    def _For(self, node: tir.For) -> list[str]:
        loops = [node]
        while self._grid_continues(loops[-1]):
            loops.append(loops[-1].body)
        with self.ctx.scope():
            names = [self.ctx.define(loop.loop_var, loop.loop_var.name) for loop in loops]
            for loop in loops:
                self.loops[loop.loop_var] = loop
            if len(loops) > 1:
                head = doc.call(self.ctx.tir("grid"), [self.expr(loop.extent) for loop in loops])
            else:
                head = self._loop_head(node)
            body = self.stmt(loops[-1].body)
            for loop in loops:
                self.loops.pop(loop.loop_var, None)
        return [f"for {', '.join(names)} in {head}:"] + indent(body or ["pass"])

    @staticmethod
    def _plain_serial(loop) -> bool:
        return (
            isinstance(loop, tir.For) and loop.kind == "serial" and not loop.annotations
            and isinstance(loop.min, tir.IntImm) and loop.min.value == 0
        )

    def _grid_continues(self, loop: tir.For) -> bool:
        inner = loop.body
        if not (self._plain_serial(loop) and self._plain_serial(inner)):
            return False
        return not _uses_var(inner.extent, loop.loop_var)

    def _loop_head(self, loop: tir.For) -> str:
        zero_min = isinstance(loop.min, tir.IntImm) and loop.min.value == 0
        bounds = [self.expr(loop.extent)] if zero_min else [self.expr(loop.min), self.expr(add_folded(loop.min, loop.extent))]
        kwargs = []
        if loop.kind == "thread_binding":
            kwargs.append(("thread", doc.string_text(loop.thread_tag)))
            method = "thread_binding"
        elif loop.kind == "serial" and not loop.annotations:
            return doc.call("range", bounds)
        else:
            method = _LOOP_KINDS[loop.kind]
        if loop.annotations:
            kwargs.append(("annotations", attr_value(self.ctx, self.exprs, loop.annotations)))
        return doc.call(self.ctx.tir(method), bounds, kwargs)

LOCAL_SCALAR = "tir.local_scalar"  # the parser's mark of `x: T.int32 = v` locals


def _split_first(body):
    if isinstance(body, tir.SeqStmt):
        rest = body.seq[1:]
        return body.seq[0], (None if not rest else rest[0] if len(rest) == 1 else tir.SeqStmt(rest))
    return body, None


def _starts_with_store(body, buffer) -> bool:
    first, _ = _split_first(body)
    return isinstance(first, tir.BufferStore) and first.buffer is buffer


def _uses_var(expr, var) -> bool:
    if expr is var:
        return True
    if isinstance(expr, tir.PrimExpr):
        return any(_uses_var(v, var) for v in vars(expr).values() if isinstance(v, (tir.PrimExpr, tuple)))
    if isinstance(expr, tuple):
        return any(_uses_var(v, var) for v in expr)
    return False


def _printed_as(params: tuple[str, ...], renamed: list) -> tuple | None:
    """(parameter names, ((buffer, name), ...) for the buffers printed under other names) of
    a PrimFunc, as its text reads back: each such buffer under that name, over a handle of
    that name. None when something else printed under another name, or a buffer whose
    handle is not its own name's (the text would not read back as a plain renaming)."""
    for node, _ in renamed:
        if not (isinstance(node, tir.Buffer) and node.data is not None and node.data.name == node.name
                and node.data.dtype == "handle"):
            return None
    return params, tuple(renamed)

