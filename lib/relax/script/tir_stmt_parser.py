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
from typing import Callable

from ..ir import tir
from . import tir_ops
from .context import ModuleRef, ParseAbort, ParseContext, Scope
from .literal_limits import LiteralError
from .ast_nodes import METADATA_MESSAGE, is_metadata
from .prim_expr import POISONED, PrimExprParser
from .tir_assign_parser import LOCAL_SCALAR_ANNOTATION, AssignmentParser, Scoped  # noqa: F401 - re-exported
from .tir_loop_parser import LoopParser
from .tir_block_parser import BLOCK_NAMES, BlockFrame, BlockHeaderParser, block_name
from .tir_values import parse_attr_dict, parse_attr_value

def _poison_targets(stmt: ast.stmt, scope: Scope) -> None:
    """The names a failed assignment would have bound: their uses are not errors again."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    for target in targets:
        for name in ast.walk(target):
            if isinstance(name, ast.Name) and scope.lookup(name.id) is None:
                scope.define(name.id, POISONED)


def make_seq(stmts: list[tir.Stmt]) -> tir.Stmt:
    if not stmts:
        return tir.Evaluate(tir.IntImm("int32", 0))
    return stmts[0] if len(stmts) == 1 else tir.SeqStmt(tuple(stmts))


class StmtParser(LoopParser, AssignmentParser):
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
            except (ParseAbort, LiteralError) as error:
                if isinstance(error, LiteralError):  # a literal met its type outside an expression
                    self.ctx.error(str(error), stmt)
                _poison_targets(stmt, scope)
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
    def string_literal(self, node: ast.expr) -> str:
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
            parts = []
            for part in node.elts[1].elts:
                if is_metadata(part):
                    raise self.ctx.fail(METADATA_MESSAGE, part)
                if not isinstance(part, ast.Constant) or not isinstance(part.value, str):
                    raise self.ctx.fail("the parts of an assert message are strings", part)
                parts.append(part.value)
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
        node = self.attr_node(call.args[0], scope)
        key = self.string_literal(call.args[1])
        value = _attr_expr(parse_attr_value(call.args[2], self.ctx, scope))
        return Scoped(lambda body: tir.AttrStmt(node, key, value, body, span=span), scope)

    def attr_node(self, node: ast.expr, scope: Scope):
        """What an AttrStmt is about: a buffer (`T.attr(A, "storage_alignment", 64)`),
        a string, or an expression."""
        if isinstance(node, ast.Name) and isinstance(scope.lookup(node.id), tir.Buffer):
            return scope.lookup(node.id)
        return parse_attr_value(node, self.ctx, scope)

    def launch_thread(self, target: ast.Name, call: ast.Call, scope: Scope) -> Scoped:
        """`tx = T.launch_thread("threadIdx.x", 128)`: a thread_extent AttrStmt over the rest."""
        if len(call.args) != 2 or call.keywords:
            raise self.ctx.fail("T.launch_thread takes a thread name and an extent", call)
        tag = self.string_literal(call.args[0])
        extent = self.exprs(scope).parse(call.args[1])
        var = tir.Var(target.id, extent.dtype, span=self.ctx.span(target))
        iter_var = tir.IterVar(var, tir.Range(tir_ops.make_const(0, extent.dtype), extent), "ThreadIndex", tag)
        inner = scope.child()
        inner.define(target.id, var)
        span = self.ctx.span(call)
        return Scoped(lambda body: tir.AttrStmt(iter_var, "thread_extent", extent, body, span=span), inner)

    def require_block(self, node: ast.AST, what: str) -> None:
        if len(self.frames) < 2:
            raise self.ctx.fail(f"{what} belongs inside a block", node)

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
        "attr": attr,
        "Assert": assert_call,
    }
    _HANDLERS: dict[type, Callable] = {
        ast.For: LoopParser._for,
        ast.While: _while,
        ast.If: _if,
        ast.With: _with,
        ast.Assign: AssignmentParser._assign,
        ast.AnnAssign: AssignmentParser._ann_assign,
        ast.AugAssign: AssignmentParser._aug_assign,
        ast.Expr: _expr,
        ast.Assert: _assert,
        ast.Return: _return,
        ast.Pass: _pass,
    }


def _attr_expr(value) -> tir.PrimExpr:
    if isinstance(value, str):
        return tir.StringImm(value)
    if isinstance(value, (bool, int, float)):
        return tir_ops.as_expr(value)
    return value
