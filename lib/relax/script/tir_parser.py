"""TIR functions from TVMScript: `@T.prim_func def f(A: T.Buffer((8,), "float32")): ...`.

`parse_prim_func` reads the decorator options (`private=True`, `s_tir=True`), the
signature (buffer parameters become a handle parameter plus a buffer_map entry,
as TVM does; scalars and `T.handle`s are variables), the symbolic sizes (declared
with `n = T.int64()` in the body, or, as TVM 0.27 prints them, names of the
signature that a module-level `n = TypeVar("n")` declares: each function gets
its own int64 variable), then the body (tir_stmt_parser) and wraps it in the
implicit root block when it has blocks.

Attributes follow TVM: a public function gets attrs["global_symbol"] = its name;
`s_tir=True` is attrs["s_tir"] = True; `T.func_attr({...})` adds the rest
(`T.target({...})` is a tir_values.TargetAttr).

What the IR looks like, for the passes, codegen and the printer:

    A: T.Buffer(...)          param Var("A", "handle") + buffer_map entry
    any block in the body     the body is BlockRealize(Block("root")) around it
    B = T.alloc_buffer(...)   Allocate(B.data, ...) { DeclBuffer(B) { rest } }
    x: T.int32 = v            the same, B a (1,) "local" buffer, Allocate annotated
                              {"tir.local_scalar": True}; `x` reads B[0], `x = e` stores
    x = e / x: T.let[...] = e LetStmt(x, e, rest)
    A_1 = A.view(16)          DeclBuffer(A_1 with A's data) { rest } (as T.decl_buffer)
    bx = T.launch_thread(...) AttrStmt(IterVar(bx, ThreadIndex), "thread_extent", n, rest)
    with T.attr({"k": v}):    AttrStmt(IntImm 0, "k", v, body)
    assert c, (kind, [parts]) AssertStmt(c, StringImm(joined parts), rest)
    return v                  Evaluate(Call(dtype, "tir.ret", (v,)))
    Module.f(args)            Evaluate(Call("int32", GlobalVar("f"), args))
    block without T.reads     regions inferred as TVM does (tir_access_regions)
"""

from __future__ import annotations

import ast

from ..ir import FrozenDict, tir
from .context import ParseAbort, ParseContext, Scope
from .printer_tir_block import contains_block
from .prim_expr import POISONED, embedded_expression, is_dtype_name
from .tir_block_parser import BlockFrame
from .tir_buffer import BufferParser
from .tir_stmt_parser import StmtParser

_DECORATOR_OPTIONS = ("private", "s_tir")


def parse_prim_func(
    func_def: ast.FunctionDef,
    ctx: ParseContext,
    module_scope: Scope,
) -> tir.PrimFunc:
    """The PrimFunc a `@T.prim_func` definition spells. Errors go to ctx; a function
    whose signature cannot be read raises ParseAbort."""
    return _FunctionParser(ctx, module_scope).parse(func_def)


def is_prim_func(func_def: ast.FunctionDef, ctx: ParseContext) -> bool:
    """Whether a definition carries `@T.prim_func` (with or without options)."""
    return any(_decorator_name(d, ctx) == "prim_func" for d in func_def.decorator_list)


def _decorator_name(decorator: ast.expr, ctx: ParseContext) -> str | None:
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    dialect = ctx.dialect_of(func)
    return dialect[1] if dialect and dialect[0] == "tir" else None


class _FunctionParser:
    def __init__(self, ctx: ParseContext, module_scope: Scope):
        self.ctx = ctx
        self.scope = module_scope.child()

    def parse(self, func_def: ast.FunctionDef) -> tir.PrimFunc:
        options = self.decorator_options(func_def)
        reads_body = func_def.name not in self.ctx.signatures_only
        statements = func_def.body if reads_body else self.attribute_statements(func_def)
        legacy = reads_body and _uses_legacy_blocks(func_def)
        stmts = StmtParser(self.ctx, BlockFrame("root", legacy=legacy), self.return_type(func_def))
        self.declare_header_vars(func_def, stmts)
        self.declare_signature_vars(func_def)
        params, buffer_map = self.parameters(func_def)
        body = stmts.body(statements, self.scope)
        body = self.with_root_block(body, stmts)
        buffer_map.update(self.matched_buffers(stmts))
        attrs = dict(stmts.func_attrs)
        if not options.get("private") and "global_symbol" not in attrs:
            attrs["global_symbol"] = func_def.name
        if options.get("s_tir") and not contains_block(body):
            # Blocks say it already (the printer writes s_tir=True for them): a kernel with
            # blocks reads back with the attributes it was printed from.
            attrs["s_tir"] = True
        ordered_map = tuple((p, buffer_map[p]) for p in params if p in buffer_map)
        return tir.PrimFunc(tuple(params), body, stmts.ret_type, ordered_map, FrozenDict(attrs),
                            span=self.ctx.span(func_def))

    # -- header ----------------------------------------------------------------
    def decorator_options(self, func_def: ast.FunctionDef) -> dict[str, bool]:
        options: dict[str, bool] = {}
        for decorator in func_def.decorator_list:
            if _decorator_name(decorator, self.ctx) != "prim_func" or not isinstance(decorator, ast.Call):
                continue
            for keyword in decorator.keywords:
                if keyword.arg not in _DECORATOR_OPTIONS:
                    self.ctx.error(f"unknown option '{keyword.arg}' of T.prim_func; expected "
                                   + " or ".join(_DECORATOR_OPTIONS), keyword)
                elif not isinstance(keyword.value, ast.Constant) or not isinstance(keyword.value.value, bool):
                    self.ctx.error(f"'{keyword.arg}' of T.prim_func is True or False", keyword.value)
                else:
                    options[keyword.arg] = keyword.value.value
            if decorator.args:
                self.ctx.error("T.prim_func takes only keyword options", decorator.args[0])
        return options

    def attribute_statements(self, func_def: ast.FunctionDef) -> list[ast.stmt]:
        """The body's `T.func_attr({...})` statements: all of a body read as a signature."""
        return [stmt for stmt in func_def.body if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                and self.ctx.dialect_of(stmt.value.func) == ("tir", "func_attr")]

    def return_type(self, func_def: ast.FunctionDef) -> str | None:
        if func_def.returns is None:
            return None
        dialect = self.ctx.dialect_of(func_def.returns)
        if dialect is None or dialect[0] != "tir" or not (is_dtype_name(dialect[1]) or dialect[1] == "handle"):
            self.ctx.error("the return type of a TIR function is a type such as T.float32", func_def.returns)
            return None
        return dialect[1]

    def declare_header_vars(self, func_def: ast.FunctionDef, stmts: StmtParser) -> None:
        """`n = T.int64()` at the top level of the body: defined before the signature reads them."""
        for stmt in func_def.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            target, value = stmt.targets[0], stmt.value
            if isinstance(target, ast.Name):
                names, values = [target], [value]
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):  # `h, w = T.int32(), T.int32()`
                names, values = target.elts, value.elts
            else:
                continue
            if all(self._is_var_declaration(v) for v in values):
                try:
                    stmts.statement(stmt, self.scope)
                except ParseAbort:
                    for name in names:
                        if isinstance(name, ast.Name):
                            self.scope.define(name.id, POISONED)
                stmts.skip.add(id(stmt))

    def _is_var_declaration(self, value: ast.expr) -> bool:
        """`T.int64()` or `T.var("int32")`: a symbolic variable's declaration."""
        dialect = self.ctx.dialect_of(value.func) if isinstance(value, ast.Call) else None
        return bool(dialect and dialect[0] == "tir" and (
            (is_dtype_name(dialect[1]) and not value.args) or (dialect[1] == "var" and len(value.args) == 1)
        ))

    def declare_signature_vars(self, func_def: ast.FunctionDef) -> None:
        """Each name of the signature that is neither a parameter nor declared in the body
        is a symbolic size of this function (TVM 0.27's module-level TypeVar)."""
        parameters = {arg.arg for arg in func_def.args.args}
        for name_node in _signature_names(func_def, self.ctx):
            name = name_node.id
            if name in parameters or name in self.ctx.aliases or name in self.scope.names:
                continue
            # A module-level `n = T.int32()` gives its type; a TypeVar is int64.
            declared = self.scope.lookup(name)
            dtype = declared.dtype if isinstance(declared, tir.Var) else "int64"
            self.scope.define(name, tir.Var(name, dtype, span=self.ctx.span(name_node)))

    def parameters(self, func_def: ast.FunctionDef) -> tuple[list[tir.Var], dict]:
        args = func_def.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
            raise self.ctx.fail("TIR parameters are plain names with type annotations", func_def)
        params: dict[int, tir.Var] = {}
        buffer_map: dict[tir.Var, tir.Buffer] = {}
        # Scalars first: buffer shapes may use them (`A: T.Buffer((n,)), n: T.int32`).
        ordered = sorted(enumerate(args.args), key=lambda item: _is_buffer_annotation(item[1], self.ctx))
        for index, arg in ordered:
            try:
                params[index] = self.parameter(arg, buffer_map)
            except ParseAbort:
                params[index] = tir.Var(arg.arg, "handle", span=self.ctx.span(arg))
                self.scope.define(arg.arg, POISONED)
        return [params[i] for i in range(len(args.args))], buffer_map

    def parameter(self, arg: ast.arg, buffer_map: dict) -> tir.Var:
        annotation = arg.annotation
        if annotation is None:
            raise self.ctx.fail(f"parameter '{arg.arg}' needs a type annotation such as T.int32 or T.Buffer(...)", arg)
        if _is_buffer_annotation(arg, self.ctx):
            annotation = _as_call(annotation)
            decl = BufferParser(self.ctx, self.scope).declaration("Buffer", annotation, arg.arg)
            if decl.data_value is not None:
                raise self.ctx.fail("a parameter's buffer has its own data; 'data=' is not allowed here", annotation)
            var = tir.Var(arg.arg, "handle", span=self.ctx.span(arg))
            buffer_map[var] = decl.buffer
            self.scope.define(arg.arg, decl.buffer)
            return var
        func = annotation.func if isinstance(annotation, ast.Call) else annotation
        dialect = self.ctx.dialect_of(func)
        if dialect is None or dialect[0] != "tir" or not (is_dtype_name(dialect[1]) or dialect[1] == "handle"):
            raise self.ctx.fail(f"parameter '{arg.arg}' has an unknown type; expected T.Buffer(...), T.handle or "
                                "a scalar type such as T.int32", annotation)
        var = tir.Var(arg.arg, dialect[1], span=self.ctx.span(arg))
        self.scope.define(arg.arg, var)
        return var

    def matched_buffers(self, stmts: StmtParser) -> dict:
        """Function-level `A = T.match_buffer(a, ...)`: the handle parameter `a` gets buffer A."""
        matched = {}
        for param_node, buffer in stmts.match_buffers:
            param = self.scope.lookup(param_node.id) if isinstance(param_node, ast.Name) else None
            if not isinstance(param, tir.Var) or param.dtype != "handle":
                self.ctx.error("T.match_buffer matches a T.handle parameter of the function", param_node)
                continue
            matched[param] = buffer
        return matched

    @staticmethod
    def with_root_block(body: tir.Stmt, stmts: StmtParser) -> tir.Stmt:
        """The implicit `with T.sblock("root"):` around a body that has blocks."""
        root = stmts.frames[0]
        if not stmts.has_blocks and not root.alloc_buffers:
            return body
        if isinstance(body, tir.BlockRealize) and body.block.name_hint == "root" and not root.alloc_buffers:
            return body
        return root.realize(body)


def _is_buffer_annotation(arg: ast.arg, ctx: ParseContext) -> bool:
    annotation = arg.annotation
    if isinstance(annotation, ast.Subscript):  # `T.Buffer[(8,), "float32"]`, before TVM 0.13
        return ctx.dialect_of(annotation.value) == ("tir", "Buffer")
    return isinstance(annotation, ast.Call) and ctx.dialect_of(annotation.func) == ("tir", "Buffer")


def _as_call(annotation: ast.expr) -> ast.expr:
    """The old subscript spelling of a buffer annotation as the call it stands for."""
    if not isinstance(annotation, ast.Subscript):
        return annotation
    index = annotation.slice
    args = list(index.elts) if isinstance(index, ast.Tuple) else [index]
    return ast.copy_location(ast.Call(annotation.value, args, []), annotation)


def _signature_names(func_def: ast.FunctionDef, ctx: ParseContext) -> list[ast.Name]:
    """The Name nodes in the parameter and return annotations, strings included."""
    found: list[ast.Name] = []
    roots = [arg.annotation for arg in func_def.args.args if arg.annotation is not None]
    if func_def.returns is not None:
        roots.append(func_def.returns)
    for root in roots:
        for child in ast.walk(root):
            if isinstance(child, ast.Name):
                found.append(child)
            elif isinstance(child, ast.Constant) and isinstance(child.value, str):
                try:
                    inner = embedded_expression(child, ctx, report=False)
                except ParseAbort:
                    continue  # reported where the shape is read
                found.extend(n for n in ast.walk(inner) if isinstance(n, ast.Name))
    return found


def _statements(body):
    """Every statement of `body`, nested ones included (what can hold a `with`)."""
    for statement in body:
        yield statement
        for field in ("body", "orelse", "finalbody"):
            nested = getattr(statement, field, None)
            if isinstance(nested, list):
                yield from _statements(nested)
        for clause in (*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())):
            yield from _statements(clause.body)


def _uses_legacy_blocks(func_def: ast.FunctionDef) -> bool:
    """Whether the function spells blocks `T.block` (before TVM 0.27), where a
    root-level T.alloc_buffer allocates in the root block."""
    # Statements only, not every expression node (ast.walk): a `with` is a statement.
    for child in _statements(func_def.body):
        if isinstance(child, ast.With):
            for item in child.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "block":
                    return True
    return False
