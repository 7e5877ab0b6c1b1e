"""TIR statements from a function body: loops, blocks, stores, lets, allocations.

A body is read statement by statement. Most statements stand alone (a loop, a
store, an `if`); some scope over the rest of their body, as TVM's classic TIR
nodes do: `x = e` is a LetStmt, `B = T.alloc_buffer(...)` an Allocate with a
DeclBuffer, `A_1 = A.view(...)` a DeclBuffer, `assert c, msg` an AssertStmt,
`tx = T.launch_thread(...)` an AttrStmt. Those return a Scoped, and the rest of
the body becomes their body. Block header statements fill the innermost
BlockFrame (tir_block_parser) and produce no statement.

An error abandons only the statement it is in; parsing resumes at the next one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable

from ..ir import EMPTY, FrozenDict, tir
from ..ir import dtype as dt
from . import tir_ops
from .context import ModuleRef, ParseAbort, ParseContext, Scope
from .prim_expr import LocalScalar, PrimExprParser, is_dtype_name, unknown_name_message
from .tir_block_parser import ALLOC_NAMES, ATTR_NAMES, AXIS_KINDS, BLOCK_NAMES, BlockFrame, BlockHeaderParser, block_name
from .tir_buffer import BufferParser
from .tir_values import parse_attr_dict, parse_attr_value

# `for i in T.<name>(...)` -> For kind.
LOOP_KINDS = {
    "serial": "serial",
    "parallel": "parallel",
    "vectorized": "vectorized",
    "unroll": "unrolled",
    "thread_binding": "thread_binding",
}
# Statement-level allocations: spelling -> memory scope it implies (None: from arguments).
STATEMENT_ALLOCS = ("alloc_buffer", "alloc_local", "alloc_shared")
# Annotation of the Allocate that holds a `x: T.int32 = v` scalar, so it prints back so.
LOCAL_SCALAR_ANNOTATION = "tir.local_scalar"


@dataclass
class Scoped:
    """A statement whose body is the rest of the enclosing body."""

    wrap: Callable[[tir.Stmt], tir.Stmt]
    scope: Scope


def make_seq(stmts: list[tir.Stmt]) -> tir.Stmt:
    if not stmts:
        return tir.Evaluate(tir.IntImm("int32", 0))
    return stmts[0] if len(stmts) == 1 else tir.SeqStmt(tuple(stmts))


class StmtParser:
    def __init__(self, ctx: ParseContext, root: BlockFrame, ret_type: str | None = None):
        self.ctx = ctx
        self.frames: list[BlockFrame] = [root]
        self.loop_ranges: dict[tir.Var, tir.Range] = {}
        self.headers = BlockHeaderParser(ctx, self.loop_ranges)
        self.has_blocks = False
        self.legacy_root = root.legacy
        self.ret_type = ret_type
        self.func_attrs: dict = {}
        self.match_buffers: list[tuple[ast.expr, tir.Buffer]] = []  # function-level T.match_buffer
        self.skip: set[int] = set()  # ids of statements already handled (declarations read ahead)

    # -- sequences ---------------------------------------------------------------
    def body(self, stmts: list[ast.stmt], scope: Scope) -> tir.Stmt:
        out: list[tir.Stmt] = []
        for index, stmt in enumerate(stmts):
            if id(stmt) in self.skip:
                continue
            try:
                result = self.statement(stmt, scope)
            except ParseAbort:
                continue
            if isinstance(result, Scoped):
                out.append(result.wrap(self.body(stmts[index + 1:], result.scope)))
                break
            if result is not None:
                out.append(result)
        return make_seq(out)

    def statement(self, stmt: ast.stmt, scope: Scope):
        handler = self._HANDLERS.get(type(stmt))
        if handler is None:
            raise self.ctx.fail(f"'{type(stmt).__name__.lower()}' statements are not supported in TIR", stmt)
        return handler(self, stmt, scope)

    def exprs(self, scope: Scope) -> PrimExprParser:
        return PrimExprParser(self.ctx, scope)

    @property
    def frame(self) -> BlockFrame:
        return self.frames[-1]

    # -- loops -----------------------------------------------------------------
    def _for(self, stmt: ast.For, scope: Scope) -> tir.Stmt:
        if stmt.orelse:
            raise self.ctx.fail("a TIR loop has no 'else'", stmt.orelse[0])
        call = stmt.iter
        if not isinstance(call, ast.Call):
            raise self.ctx.fail("a TIR loop iterates over range(...), T.grid(...) or T.serial(...)", call)
        targets = stmt.target.elts if isinstance(stmt.target, ast.Tuple) else [stmt.target]
        kind, annotations, thread, bounds = self.loop_header(call, scope)
        if kind != "grid" and len(targets) != 1:
            raise self.ctx.fail("only T.grid binds several loop variables", stmt.target)
        if kind == "grid" and len(targets) != len(bounds):
            raise self.ctx.fail(f"T.grid has {len(bounds)} extents but {len(targets)} loop variables", stmt.target)
        inner = scope.child()
        loops = []
        for target, (low, extent) in zip(targets, bounds):
            if not isinstance(target, ast.Name):
                raise self.ctx.fail("a loop variable is a name", target)
            var = tir.Var(target.id, extent.dtype, span=self.ctx.span(target))
            inner.define(target.id, var)
            self.loop_ranges[var] = tir.Range(low, extent)
            loops.append((var, low, extent))
        body = self.body(stmt.body, inner)
        for var, low, extent in reversed(loops):
            body = tir.For(var, low, extent, "serial" if kind == "grid" else kind, body, thread_tag=thread,
                           annotations=annotations, span=self.ctx.span(stmt))
        return body

    def loop_header(self, call: ast.Call, scope: Scope):
        """(kind, annotations, thread tag, [(min, extent)]) of a loop's iterator call."""
        if isinstance(call.func, ast.Name) and call.func.id == "range":
            name = "serial"
        else:
            dialect = self.ctx.dialect_of(call.func)
            name = dialect[1] if dialect and dialect[0] == "tir" else None
            if name != "grid" and name not in LOOP_KINDS:
                shown = f"T.{name}" if name else ast.unparse(call.func)
                raise self.ctx.fail(f"'{shown}' is not a TIR loop; expected range, T.grid, " + ", ".join(f"T.{k}" for k in LOOP_KINDS), call.func)
        keywords = {k.arg: k.value for k in call.keywords}
        allowed = {"annotations", "thread"} if name == "thread_binding" else {"annotations"}
        for key, value in keywords.items():
            if key not in allowed:
                raise self.ctx.fail(f"unexpected keyword '{key}' in a loop", value)
        annotations = parse_attr_dict(keywords["annotations"], self.ctx, scope) if "annotations" in keywords else EMPTY
        exprs = self.exprs(scope)
        if name == "grid":
            return "grid", EMPTY, "", [self.bounds([e], exprs, call) for e in call.args]
        args = list(call.args)
        thread = ""
        if name == "thread_binding":
            if "thread" in keywords:
                thread = self.headers_string(keywords["thread"])
            elif args and isinstance(args[-1], ast.Constant) and isinstance(args[-1].value, str):
                thread = args.pop().value
            else:
                raise self.ctx.fail("T.thread_binding needs thread=\"threadIdx.x\" (or another thread)", call)
        return LOOP_KINDS[name], annotations, thread, [self.bounds(args, exprs, call)]

    def bounds(self, args: list[ast.expr], exprs: PrimExprParser, call: ast.Call):
        """(min, extent) from `(extent)`, `(start, stop)` or a `(start, stop)` tuple in T.grid."""
        if len(args) == 1 and isinstance(args[0], ast.Tuple):
            args = args[0].elts
        if len(args) == 1:
            extent = exprs.parse(args[0])
            return tir_ops.make_const(0, extent.dtype), extent
        if len(args) == 2:
            start, stop = tir_ops.match_types(exprs.value(args[0]), exprs.value(args[1]))
            return start, tir_ops.extent_between(start, stop)
        raise self.ctx.fail("a loop takes an extent or a start and a stop", call)

    def headers_string(self, node: ast.expr) -> str:
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            raise self.ctx.fail("expected a string", node)
        return node.value

    # -- control flow --------------------------------------------------------------
    def _while(self, stmt: ast.While, scope: Scope) -> tir.Stmt:
        if stmt.orelse:
            raise self.ctx.fail("a TIR while loop has no 'else'", stmt.orelse[0])
        condition = self.exprs(scope).parse(stmt.test)
        return tir.While(condition, self.body(stmt.body, scope.child()), span=self.ctx.span(stmt))

    def _if(self, stmt: ast.If, scope: Scope) -> tir.Stmt:
        condition = self.exprs(scope).parse(stmt.test)
        then_case = self.body(stmt.body, scope.child())
        else_case = self.body(stmt.orelse, scope.child()) if stmt.orelse else None
        return tir.IfThenElse(condition, then_case, else_case, span=self.ctx.span(stmt))

    def _assert(self, stmt: ast.Assert, scope: Scope) -> Scoped:
        condition = self.exprs(scope).parse(stmt.test)
        message = self.assert_message(stmt.msg)
        span = self.ctx.span(stmt)
        return Scoped(lambda body: tir.AssertStmt(condition, message, body, span=span), scope)

    def assert_message(self, node: ast.expr | None) -> tir.PrimExpr:
        """`"text"` or TVM 0.27's `("RuntimeError", ["part", ...])`: the message text."""
        if node is None:
            return tir.StringImm("")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return tir.StringImm(node.value)
        if isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[1], (ast.List, ast.Tuple)):
            parts = [p.value for p in node.elts[1].elts if isinstance(p, ast.Constant) and isinstance(p.value, str)]
            if len(parts) == len(node.elts[1].elts):
                return tir.StringImm("".join(parts))
        raise self.ctx.fail("an assert message is a string or (kind, [parts])", node)

    def _return(self, stmt: ast.Return, scope: Scope) -> tir.Stmt:
        if stmt.value is None:
            raise self.ctx.fail("a TIR return needs a value", stmt)
        value = self.exprs(scope).value(stmt.value)
        value = tir_ops.cast(self.ret_type, value) if self.ret_type else tir_ops.as_expr(value)
        return tir.Evaluate(tir.Call(value.dtype, "tir.ret", (value,)), span=self.ctx.span(stmt))

    def _pass(self, stmt: ast.Pass, scope: Scope) -> None:
        return None

    # -- with ---------------------------------------------------------------------
    def _with(self, stmt: ast.With, scope: Scope):
        if len(stmt.items) != 1:
            raise self.ctx.fail("a TIR 'with' opens one frame", stmt)
        item = stmt.items[0]
        call = item.context_expr
        dialect = self.ctx.dialect_of(call.func) if isinstance(call, ast.Call) else None
        name = dialect[1] if dialect and dialect[0] == "tir" else None
        if name in BLOCK_NAMES:
            return self.block(stmt, call, name, scope)
        if name == "init":
            return self.init(stmt, scope)
        if name == "attr":
            return self.attr(call, scope).wrap(self.body(stmt.body, scope.child()))
        if name == "launch_thread":
            if not isinstance(item.optional_vars, ast.Name):
                raise self.ctx.fail("write 'with T.launch_thread(...) as name:'", stmt)
            scoped = self.launch_thread(item.optional_vars, call, scope)
            return scoped.wrap(self.body(stmt.body, scoped.scope))
        shown = f"T.{name}" if name else ast.unparse(call)
        raise self.ctx.fail(f"'{shown}' cannot open a 'with' frame in TIR", call)

    def block(self, stmt: ast.With, call: ast.Call, spelling: str, scope: Scope) -> tir.Stmt:
        frame = BlockFrame(block_name(call, self.ctx), legacy=spelling == "block")
        self.has_blocks = True
        self.frames.append(frame)
        try:
            body = self.body(stmt.body, scope.child())
        finally:
            self.frames.pop()
        return frame.realize(body, span=self.ctx.span(stmt))

    def init(self, stmt: ast.With, scope: Scope) -> None:
        if len(self.frames) < 2:
            raise self.ctx.fail("'T.init()' belongs inside a block", stmt)
        self.frame.init = self.body(stmt.body, scope.child())
        return None

    def attr(self, call: ast.Call, scope: Scope) -> Scoped:
        """`T.attr(node, "key", value)` or TVM 0.27's `T.attr({"key": value})`."""
        span = self.ctx.span(call)
        if len(call.args) == 1 and isinstance(call.args[0], ast.Dict):
            items = parse_attr_dict(call.args[0], self.ctx, scope)

            def wrap(body):
                for key, value in reversed(list(items.items())):
                    body = tir.AttrStmt(tir.IntImm("int32", 0), key, _attr_expr(value), body, span=span)
                return body

            return Scoped(wrap, scope)
        if len(call.args) != 3:
            raise self.ctx.fail("T.attr takes a node, a key and a value", call)
        node = parse_attr_value(call.args[0], self.ctx, scope)
        key = self.headers_string(call.args[1])
        value = _attr_expr(parse_attr_value(call.args[2], self.ctx, scope))
        return Scoped(lambda body: tir.AttrStmt(node, key, value, body, span=span), scope)

    def launch_thread(self, target: ast.Name, call: ast.Call, scope: Scope) -> Scoped:
        """`tx = T.launch_thread("threadIdx.x", 128)`: a thread_extent AttrStmt over the rest."""
        if len(call.args) != 2 or call.keywords:
            raise self.ctx.fail("T.launch_thread takes a thread name and an extent", call)
        tag = self.headers_string(call.args[0])
        extent = self.exprs(scope).parse(call.args[1])
        var = tir.Var(target.id, extent.dtype, span=self.ctx.span(target))
        iter_var = tir.IterVar(var, tir.Range(tir_ops.make_const(0, extent.dtype), extent), "ThreadIndex", tag)
        inner = scope.child()
        inner.define(target.id, var)
        span = self.ctx.span(call)
        return Scoped(lambda body: tir.AttrStmt(iter_var, "thread_extent", extent, body, span=span), inner)

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
        dialect = self.ctx.dialect_of(value.func) if isinstance(value, ast.Call) else None
        if dialect != ("tir", "axis.remap"):
            raise self.ctx.fail("only T.axis.remap assigns several names in TIR", target)
        self.require_block(value, "T.axis.remap")
        self.headers.remap(self.frame, target.elts, value, scope)
        return None

    def require_block(self, node: ast.AST, what: str) -> None:
        if len(self.frames) < 2:
            raise self.ctx.fail(f"{what} belongs inside a block", node)

    def declaration(self, target: ast.Name, value: ast.expr, scope: Scope):
        """`name = T.<declaration>(...)`; False when the value is an ordinary expression."""
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "view":
            source = scope.lookup(value.func.value.id) if isinstance(value.func.value, ast.Name) else None
            if isinstance(source, tir.Buffer):
                buffer = BufferParser(self.ctx, scope).view(source, value, target.id)
                return self.decl_buffer(target, buffer, scope, value)
        dialect = self.ctx.dialect_of(value.func) if isinstance(value, ast.Call) else None
        if dialect is None or dialect[0] != "tir":
            return False
        name = dialect[1]
        if is_dtype_name(name) and not value.args:
            return self.declare_var(target, name, value, scope)
        if name.startswith("axis."):
            kind = name[len("axis."):]
            if kind not in AXIS_KINDS:
                raise self.ctx.fail(unknown_name_message(name, [f"axis.{k}" for k in AXIS_KINDS]), value.func)
            self.require_block(value, f"T.axis.{kind}")
            self.headers.axis(self.frame, target, value, kind, scope)
            return None
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
            decl = BufferParser(self.ctx, scope).declaration(name, value, target.id)
            if name == "Buffer":
                scope.define(target.id, decl.buffer)
                return None
            if "data" not in {k.arg for k in value.keywords} and len(value.args) < 3:
                return self.allocate(target, decl.buffer, EMPTY, scope, value)
            return self.decl_buffer(target, decl.buffer, scope, value)
        return False

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

    def decl_buffer(self, target: ast.Name, buffer: tir.Buffer, scope: Scope, node: ast.AST) -> Scoped:
        inner = scope.child()
        inner.define(target.id, buffer)
        span = self.ctx.span(node)
        return Scoped(lambda body: tir.DeclBuffer(buffer, body, span=span), inner)

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
        errors_before = len(self.ctx.diagnostics)
        parsed = exprs.value(value)
        if len(self.ctx.diagnostics) > errors_before:
            # The value already has an error (an undefined name): its type means nothing.
            return tir.BufferStore(buffer, tir_ops.as_expr(parsed), indices, span=self.ctx.span(stmt))
        stored = self.stored_value(buffer, parsed, value, indices)
        return tir.BufferStore(buffer, stored, indices, span=self.ctx.span(stmt))

    def stored_value(self, buffer: tir.Buffer, value, node: ast.expr, indices=()) -> tir.PrimExpr:
        lanes = max([dt.lanes(i.dtype) for i in indices] + [1])
        expected = dt.with_lanes(buffer.dtype, lanes) if lanes > 1 else buffer.dtype
        if not isinstance(value, tir.PrimExpr) or isinstance(value, (tir.IntImm, tir.FloatImm)):
            return tir_ops.cast(expected, value)
        if value.dtype != expected:
            raise self.ctx.fail(f"cannot store a {value.dtype} value in buffer '{buffer.name}' of {expected}", node)
        return value

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

    # -- expression statements ---------------------------------------------------------
    def _expr(self, stmt: ast.Expr, scope: Scope):
        value = stmt.value
        dialect = self.ctx.dialect_of(value.func) if isinstance(value, ast.Call) else None
        name = dialect[1] if dialect and dialect[0] == "tir" else None
        handler = self._CALL_STATEMENTS.get(name)
        if handler is not None:
            return handler(self, value, scope)
        global_var = self.module_function(value.func, scope) if isinstance(value, ast.Call) else None
        if global_var is not None:
            return tir.Evaluate(self.function_call(value, global_var, scope), span=self.ctx.span(stmt))
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return None  # a docstring
        return tir.Evaluate(self.exprs(scope).parse(value), span=self.ctx.span(stmt))

    def module_function(self, func: ast.expr, scope: Scope):
        """The GlobalVar of `Module.add` / `cls.add`: a call of another function of the module."""
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return None
        module = scope.lookup(func.value.id)
        if isinstance(module, ModuleRef):
            return module.global_vars.get(func.attr)
        return None

    def function_call(self, call: ast.Call, global_var, scope: Scope) -> tir.Call:
        args = tuple(self.exprs(scope).parse(a) for a in call.args)
        return tir.Call("int32", global_var, args, span=self.ctx.span(call))

    def evaluate(self, call: ast.Call, scope: Scope) -> tir.Stmt:
        if len(call.args) != 1 or call.keywords:
            raise self.ctx.fail("T.evaluate takes one expression", call)
        return tir.Evaluate(self.exprs(scope).parse(call.args[0]), span=self.ctx.span(call))

    def func_attr(self, call: ast.Call, scope: Scope) -> None:
        if len(self.frames) > 1 or len(call.args) != 1 or call.keywords:
            raise self.ctx.fail("T.func_attr takes one dictionary, at the top of the function", call)
        self.func_attrs.update(parse_attr_dict(call.args[0], self.ctx, scope))
        return None

    def reads_or_writes(self, call: ast.Call, scope: Scope) -> None:
        name = call.func.attr
        self.require_block(call, f"T.{name}")
        regions = self.headers.regions(call, scope)
        setattr(self.frame, name, regions)
        return None

    def where(self, call: ast.Call, scope: Scope) -> None:
        self.require_block(call, "T.where")
        self.headers.where(self.frame, call, scope)
        return None

    def block_attr(self, call: ast.Call, scope: Scope) -> None:
        self.require_block(call, "T.sblock_attr")
        self.headers.annotations(self.frame, call, scope)
        return None

    def attr_statement(self, call: ast.Call, scope: Scope) -> Scoped:
        return self.attr(call, scope)

    def assert_call(self, call: ast.Call, scope: Scope) -> Scoped:
        """`T.Assert(condition, message)` as a statement over the rest of the body."""
        if len(call.args) != 2:
            raise self.ctx.fail("T.Assert takes a condition and a message", call)
        condition = self.exprs(scope).parse(call.args[0])
        message = self.assert_message(call.args[1])
        span = self.ctx.span(call)
        return Scoped(lambda body: tir.AssertStmt(condition, message, body, span=span), scope)

    _CALL_STATEMENTS: dict[str, Callable] = {
        "evaluate": evaluate,
        "func_attr": func_attr,
        "reads": reads_or_writes,
        "writes": reads_or_writes,
        "where": where,
        "sblock_attr": block_attr,
        "block_attr": block_attr,
        "attr": attr_statement,
        "Assert": assert_call,
    }
    _HANDLERS: dict[type, Callable] = {
        ast.For: _for,
        ast.While: _while,
        ast.If: _if,
        ast.With: _with,
        ast.Assign: _assign,
        ast.AnnAssign: _ann_assign,
        ast.AugAssign: _aug_assign,
        ast.Expr: _expr,
        ast.Assert: _assert,
        ast.Return: _return,
        ast.Pass: _pass,
    }


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


def _attr_expr(value) -> tir.PrimExpr:
    if isinstance(value, str):
        return tir.StringImm(value)
    if isinstance(value, (bool, int, float)):
        return tir_ops.as_expr(value)
    return value
