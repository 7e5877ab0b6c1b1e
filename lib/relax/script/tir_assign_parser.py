"""Assignments in TIR bodies: stores, lets, declarations and allocations.

`A[i] = v` stores; `x = e` and `x: T.let[T.int32] = e` bind a LetStmt over the rest
of the body; `x: T.int32 = e` declares a mutable local scalar (a one-element local
buffer, as TVM 0.27 does); `n = T.int64()` declares a size variable;
`B = T.alloc_buffer(...)` (also `T.alloc_local`, `T.alloc_shared`, `T.decl_buffer`
without data) allocates over the rest of the body; `A_1 = A.view(...)` and
`T.decl_buffer(..., data=...)` declare a buffer over existing data; block-level
declarations (`T.axis.*`, `T.sblock_alloc_buffer`, `T.match_buffer` of a region)
go to the innermost block frame.

AssignmentParser is a part of StmtParser (tir_stmt_parser.py).
"""

from __future__ import annotations

import ast
from typing import Callable

from ..ir import EMPTY, FrozenDict, tir
from ..ir import dtype as dt
from ..records import record
from . import tir_ops
from .context import Scope
from .literal_limits import LiteralError
from .prim_expr import LocalScalar, is_dtype_name, unknown_name_message
from .tir_block_parser import ALLOC_NAMES, AXIS_KINDS
from .tir_buffer import BufferParser
from .tir_values import parse_attr_dict

# `name = T.<spelling>(...)` outside blocks allocates over the rest of the body.
STATEMENT_ALLOCS = ("alloc_buffer", "alloc_local", "alloc_shared")
# Annotation of the Allocate that holds a `x: T.int32 = v` scalar, so it prints back so.
LOCAL_SCALAR_ANNOTATION = "tir.local_scalar"
SEVERAL_NAMES = ("only T.axis.remap and declarations such as `h, w = T.int32(), T.int32()` "
                 "assign several names in TIR")


@record(mutable=True)
class Scoped:
    """A statement whose body is the rest of the enclosing body."""

    wrap: Callable[[tir.Stmt], tir.Stmt]
    scope: Scope


class AssignmentParser:
    """The assignment statements of StmtParser."""

    # -- assignments -----------------------------------------------------------------
    def _assign(self, stmt: ast.Assign, scope: Scope):
        if len(stmt.targets) != 1:
            raise self.ctx.fail("chained assignment is not supported in TIR", stmt)
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, ast.Subscript):
            return self.store(target, value, scope, stmt)
        if isinstance(target, ast.Tuple):
            return self.tuple_assign(target, value, scope)
        if not isinstance(target, ast.Name):
            raise self.ctx.fail("cannot assign to this in TIR", target)
        existing = scope.lookup(target.id)
        if isinstance(existing, LocalScalar):
            return self.scalar_store(existing, value, scope, stmt)
        declared = self.declaration(target, value, scope)
        if declared is not False:
            return declared
        bound = self.exprs(scope).parse(value)
        return self.let(target, bound, scope, stmt)

    def let(self, target: ast.Name, value: tir.PrimExpr, scope: Scope, stmt: ast.stmt, dtype: str | None = None) -> Scoped:
        var = tir.Var(target.id, dtype or value.dtype, span=self.ctx.span(target))
        inner = scope.child()
        inner.define(target.id, var)
        span = self.ctx.span(stmt)
        return Scoped(lambda body: tir.LetStmt(var, value, body, span=span), inner)

    def tuple_assign(self, target: ast.Tuple, value: ast.expr, scope: Scope) -> None:
        if isinstance(value, ast.Tuple):
            return self.tuple_declaration(target, value, scope)
        dialect = self.ctx.dialect_of(value.func) if isinstance(value, ast.Call) else None
        if dialect != ("tir", "axis.remap"):
            raise self.ctx.fail(SEVERAL_NAMES, target)
        self.require_block(value, "T.axis.remap")
        self.headers.remap(self.frame, target.elts, value, scope)
        return None

    def tuple_declaration(self, target: ast.Tuple, value: ast.Tuple, scope: Scope) -> None:
        """`h, w = T.int32(), T.int32()`: several symbolic variables, as TVM 0.27 prints
        the sizes that one buffer parameter introduces."""
        if len(target.elts) != len(value.elts):
            raise self.ctx.fail(f"{len(target.elts)} names but {len(value.elts)} values", target)
        pairs = list(zip(target.elts, value.elts))
        for name, call in pairs:
            if not isinstance(name, ast.Name):
                raise self.ctx.fail(SEVERAL_NAMES, name)
            if self.var_dtype(call, scope) is None:
                raise self.ctx.fail(SEVERAL_NAMES, call)
        for name, call in pairs:
            self.declare_var(name, self.var_dtype(call, scope), call, scope)
        return None

    def var_dtype(self, value: ast.expr, scope: Scope) -> str | None:
        """The dtype that `T.int32()` (or `T.var("int32")`) declares; None for other values."""
        dialect = self.ctx.dialect_of(value.func) if isinstance(value, ast.Call) else None
        if dialect is None or dialect[0] != "tir":
            return None
        if is_dtype_name(dialect[1]) and not value.args:
            return dialect[1]
        if dialect[1] == "var" and len(value.args) == 1:  # `n = T.var("int32")`, before TVM 0.11
            return self.exprs(scope).dtype_string(value.args[0])
        return None

    def declaration(self, target: ast.Name, value: ast.expr, scope: Scope):
        """`name = T.<declaration>(...)`; False when the value is an ordinary expression."""
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "view":
            viewed = self.view_declaration(target, value, scope)
            if viewed is not False:
                return viewed
        dialect = self.ctx.dialect_of(value.func) if isinstance(value, ast.Call) else None
        if dialect is None or dialect[0] != "tir":
            return False
        name = dialect[1]
        var_dtype = self.var_dtype(value, scope)
        if var_dtype is not None:
            return self.declare_var(target, var_dtype, value, scope)
        if name.startswith("axis."):
            return self.axis_declaration(target, value, name[len("axis."):], scope)
        if name == "launch_thread":
            return self.launch_thread(target, value, scope)
        if name == "match_buffer":
            return self.match_buffer(target, value, scope)
        if name in ALLOC_NAMES or (name == "alloc_buffer" and self.frame.legacy):
            return self.block_alloc(target, value, name, scope)
        if name in STATEMENT_ALLOCS:
            return self.statement_alloc(target, value, name, scope)
        if name == "allocate":
            return self.raw_allocate(target, value, scope)
        if name in ("decl_buffer", "Buffer"):
            return self.buffer_declaration(target, value, name, scope)
        return False

    def view_declaration(self, target: ast.Name, call: ast.Call, scope: Scope):
        """`A_1 = A.view(...)` of a buffer in scope; False when `A` is not a buffer."""
        source = scope.lookup(call.func.value.id) if isinstance(call.func.value, ast.Name) else None
        if not isinstance(source, tir.Buffer):
            return False
        buffer = BufferParser(self.ctx, scope).view(source, call, target.id)
        return self.decl_buffer(target, buffer, scope, call)

    def axis_declaration(self, target: ast.Name, call: ast.Call, kind: str, scope: Scope) -> None:
        """`v = T.axis.<kind>(...)`: a block iterator of the innermost block."""
        if kind not in AXIS_KINDS:
            raise self.ctx.fail(unknown_name_message(f"axis.{kind}", [f"axis.{k}" for k in AXIS_KINDS]), call.func)
        self.require_block(call, f"T.axis.{kind}")
        self.headers.axis(self.frame, target, call, kind, scope)
        return None

    def buffer_declaration(self, target: ast.Name, call: ast.Call, name: str, scope: Scope):
        """`T.decl_buffer(...)` / `T.Buffer(...)`: an alias, an allocation, or a buffer over given data."""
        decl = BufferParser(self.ctx, scope).declaration(name, call, target.id)
        if name == "Buffer" and decl.data_value is None:
            scope.define(target.id, decl.buffer)  # an alias of existing data, no statement
            return None
        if "data" not in {k.arg for k in call.keywords} and len(call.args) < 3:
            return self.allocate(target, decl.buffer, EMPTY, scope, call)
        return self.decl_buffer(target, decl.buffer, scope, call, decl.data_value)

    def declare_var(self, target: ast.Name, dtype: str, call: ast.Call, scope: Scope) -> None:
        size_var = any(k.arg == "is_size_var" and isinstance(k.value, ast.Constant) and k.value.value for k in call.keywords)
        var_class = tir.SizeVar if size_var else tir.Var
        scope.define(target.id, var_class(target.id, dtype, span=self.ctx.span(target)))
        return None

    def match_buffer(self, target: ast.Name, call: ast.Call, scope: Scope) -> None:
        decl = BufferParser(self.ctx, scope).declaration("match_buffer", call, target.id)
        if decl.param is None:
            raise self.ctx.fail("T.match_buffer needs the handle or region it matches", call)
        if isinstance(decl.param, ast.Subscript):
            self.require_block(call, "T.match_buffer of a region")
            self.headers.match_buffer_region(self.frame, decl.buffer, decl.param, scope)
        else:
            self.match_buffers.append((decl.param, decl.buffer))
        scope.define(target.id, decl.buffer)
        return None

    def block_alloc(self, target: ast.Name, call: ast.Call, name: str, scope: Scope) -> None:
        kind = "sblock_alloc_buffer" if name == "alloc_buffer" else name
        decl = BufferParser(self.ctx, scope).declaration(kind, call, target.id)
        self.frame.alloc_buffers.append(decl.buffer)
        scope.define(target.id, decl.buffer)
        return None

    def statement_alloc(self, target: ast.Name, call: ast.Call, name: str, scope: Scope) -> Scoped:
        decl = BufferParser(self.ctx, scope).declaration(name, call, target.id)
        return self.allocate(target, decl.buffer, decl.annotations, scope, call)

    def allocate(self, target: ast.Name, buffer: tir.Buffer, annotations: FrozenDict, scope: Scope, node: ast.AST) -> Scoped:
        """An Allocate of the buffer's data with a DeclBuffer of it, over the rest of the body."""
        inner = scope.child()
        inner.define(target.id, buffer)
        span = self.ctx.span(node)
        return Scoped(lambda body: allocate_buffer(buffer, body, annotations, span), inner)

    def raw_allocate(self, target: ast.Name, call: ast.Call, scope: Scope) -> Scoped:
        """`ptr = T.allocate([16], "float32", "global")` (before TVM 0.27): memory behind a handle."""
        names = ("extents", "dtype", "scope", "condition", "annotations")
        args = dict(zip(names, call.args))
        args.update((k.arg, k.value) for k in call.keywords)
        unknown = set(args) - set(names)
        if unknown or "extents" not in args or "dtype" not in args:
            raise self.ctx.fail("T.allocate takes extents, dtype, scope, condition and annotations", call)
        buffers = BufferParser(self.ctx, scope)
        exprs = self.exprs(scope)
        extents = buffers.shape(args["extents"])
        dtype = exprs.dtype_string(args["dtype"])
        memory_scope = buffers.string(args["scope"]) if "scope" in args else "global"
        condition = exprs.parse(args["condition"]) if "condition" in args else tir.IntImm("bool", 1)
        annotations = parse_attr_dict(args["annotations"], self.ctx, scope) if "annotations" in args else EMPTY
        var = tir.Var(target.id, "handle", span=self.ctx.span(target))
        inner = scope.child()
        inner.define(target.id, var)
        span = self.ctx.span(call)
        return Scoped(lambda body: tir.Allocate(var, dtype, extents, condition, body, annotations=annotations,
                                                scope=memory_scope, span=span), inner)

    def decl_buffer(self, target: ast.Name, buffer: tir.Buffer, scope: Scope, node: ast.AST,
                    data_value: tir.PrimExpr | None = None) -> Scoped:
        inner = scope.child()
        inner.define(target.id, buffer)
        span = self.ctx.span(node)

        def wrap(body):
            declared = tir.DeclBuffer(buffer, body, span=span)
            return declared if data_value is None else tir.LetStmt(buffer.data, data_value, declared, span=span)

        return Scoped(wrap, inner)

    def _ann_assign(self, stmt: ast.AnnAssign, scope: Scope):
        """`x: T.let[T.int32] = v` binds x; `x: T.int32 = v` declares a mutable local scalar."""
        if not isinstance(stmt.target, ast.Name):
            raise self.ctx.fail("an annotated assignment in TIR binds a name", stmt.target)
        annotation = stmt.annotation
        is_let = False
        if isinstance(annotation, ast.Subscript) and self.ctx.dialect_of(annotation.value) == ("tir", "let"):
            annotation, is_let = annotation.slice, True
        elif self.ctx.dialect_of(annotation) == ("tir", "let"):
            annotation, is_let = None, True
        dtype = self.annotation_dtype(annotation) if annotation is not None else None
        if not is_let and dtype == "handle":
            raise self.ctx.fail("a handle cannot be a local scalar; write T.let[T.handle]", stmt.annotation)
        if stmt.value is None:
            raise self.ctx.fail("an annotated TIR variable needs a value", stmt)
        value = self.exprs(scope).value(stmt.value)
        if is_let:
            bound = tir_ops.cast(dtype, value) if dtype and dtype != "handle" else tir_ops.as_expr(value)
            return self.let(stmt.target, bound, scope, stmt, dtype)
        buffer = tir.Buffer(stmt.target.id, (tir.IntImm("int32", 1),), dtype,
                            data=tir.Var(stmt.target.id, "handle"), scope="local", span=self.ctx.span(stmt))
        slot = LocalScalar(buffer)
        inner = scope.child()
        inner.define(stmt.target.id, slot)
        store = tir.BufferStore(buffer, tir_ops.cast(dtype, value), (tir.IntImm("int32", 0),), span=self.ctx.span(stmt))
        span = self.ctx.span(stmt)
        annotations = FrozenDict({LOCAL_SCALAR_ANNOTATION: True})
        return Scoped(lambda body: allocate_buffer(buffer, _prepend(store, body), annotations, span), inner)

    def annotation_dtype(self, node: ast.expr) -> str:
        dialect = self.ctx.dialect_of(node.func if isinstance(node, ast.Call) else node)
        if dialect is None or dialect[0] != "tir" or not (is_dtype_name(dialect[1]) or dialect[1] == "handle"):
            raise self.ctx.fail("expected a TIR type such as T.int32", node)
        return dialect[1]

    def scalar_store(self, slot: LocalScalar, value: ast.expr, scope: Scope, stmt: ast.stmt) -> tir.Stmt:
        stored = self.stored_value(slot.buffer, self.exprs(scope).value(value), value)
        return tir.BufferStore(slot.buffer, stored, (tir.IntImm("int32", 0),), span=self.ctx.span(stmt))

    def store(self, target: ast.Subscript, value: ast.expr, scope: Scope, stmt: ast.stmt) -> tir.Stmt:
        exprs = self.exprs(scope)
        buffer = exprs.buffer(target.value)
        indices = exprs.indices(target, buffer)
        stored = self.stored_value(buffer, exprs.value(value), value, indices)
        return tir.BufferStore(buffer, stored, indices, span=self.ctx.span(stmt))

    def stored_value(self, buffer: tir.Buffer, value, node: ast.expr, indices=()) -> tir.PrimExpr:
        """The value as the buffer's element type: TVM casts what is stored, as C does."""
        lanes = max([dt.lanes(i.dtype) for i in indices] + [1])
        expected = dt.with_lanes(buffer.dtype, lanes) if lanes > 1 else buffer.dtype
        try:
            return tir_ops.cast(expected, value)
        except LiteralError as error:
            raise self.ctx.fail(str(error), node) from None

    def _aug_assign(self, stmt: ast.AugAssign, scope: Scope) -> tir.Stmt:
        """`A[i] += v` is `A[i] = A[i] + v`."""
        as_load = ast.copy_location(ast.BinOp(stmt.target, stmt.op, stmt.value), stmt)
        as_load.end_lineno, as_load.end_col_offset = stmt.end_lineno, stmt.end_col_offset
        target = stmt.target
        if isinstance(target, ast.Subscript):
            return self.store(target, as_load, scope, stmt)
        slot = scope.lookup(target.id) if isinstance(target, ast.Name) else None
        if isinstance(slot, LocalScalar):
            return self.scalar_store(slot, as_load, scope, stmt)
        raise self.ctx.fail("only buffer elements and scalars declared with a type can be updated in place", target)


def allocate_buffer(buffer: tir.Buffer, body: tir.Stmt, annotations: FrozenDict, span) -> tir.Stmt:
    """Classic TIR's spelling of an allocation: Allocate(data) { DeclBuffer(buffer) { body } }."""
    declared = tir.DeclBuffer(buffer, body, span=span)
    return tir.Allocate(buffer.data, buffer.dtype, buffer.shape, tir.IntImm("bool", 1), declared,
                        annotations=annotations, scope=buffer.scope, span=span)


def _prepend(first: tir.Stmt, body: tir.Stmt) -> tir.Stmt:
    if isinstance(body, tir.Evaluate) and isinstance(body.value, tir.IntImm):
        return first  # an empty rest of body
    rest = body.seq if isinstance(body, tir.SeqStmt) else (body,)
    return tir.SeqStmt((first, *rest))
