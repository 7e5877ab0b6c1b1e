"""Relax functions from TVMScript: `@R.function def f(x: R.Tensor(...)) -> ...:`.

A function body is a list of statements that become binding blocks:

    x: ANNOT = expr / x = expr       a VarBinding (struct info from the annotation, or None)
    y = R.match_cast(x, SINFO)       a MatchCast binding
    with R.dataflow(): ... R.output(a, b)
                                     a DataflowBlock: its variables are DataflowVars
                                     except those that R.output lists, which stay visible
    if c: ...  else: ...             both branches end by assigning the same name, which
                                     becomes the variable bound to the If; the branches
                                     are SeqExprs whose body is that last value
    R.print(...)                     an expression statement, bound to a variable `_`
    @R.function def inner(...)       a local function bound to a variable
    n = T.int64()                    declares symbolic variable n (read before the params)
    cls = Module                     names the module, for `cls.f`
    R.func_attr({...})               function attributes
    return expr                      the body's result, last

Errors in one statement are recorded and the next statement is parsed, so that all
independent errors of a function are reported together.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .. import ir
from ..ir import tir
from .context import ModuleRef, ParseAbort, ParseContext, Scope
from .prim_expr import is_known_dtype
from .relax_expr import ExprParser
from .relax_literals import attr_dict
from .relax_struct_info import _describe


@dataclass
class _Blocks:
    """Collects bindings into blocks: consecutive plain bindings share a BindingBlock."""

    blocks: list = field(default_factory=list)
    bindings: list = field(default_factory=list)

    def add(self, binding: ir.Binding) -> None:
        self.bindings.append(binding)

    def add_dataflow(self, block: ir.DataflowBlock) -> None:
        self.flush()
        self.blocks.append(block)

    def flush(self) -> None:
        if self.bindings:
            self.blocks.append(ir.BindingBlock(tuple(self.bindings)))
            self.bindings = []

    def finish(self) -> tuple[ir.BindingBlock, ...]:
        self.flush()
        return tuple(self.blocks)


@dataclass
class _Dataflow:
    """The dataflow block being parsed: the names its R.output makes visible after it."""

    outputs: dict[str, ast.expr]


@dataclass
class _BranchResult:
    blocks: tuple
    name: str
    value: ir.Expr
    struct_info: ir.StructInfo | None
    target: ast.AST


def function_options(ctx: ParseContext, decorator: ast.expr) -> tuple[bool, bool]:
    """(pure, private) from `@R.function`, `@R.function(private=True, pure=False)`."""
    options = {"pure": True, "private": False}
    if isinstance(decorator, ast.Call):
        if decorator.args:
            raise ctx.fail("R.function takes only the keyword arguments pure= and private=", decorator.args[0])
        for keyword in decorator.keywords:
            if keyword.arg not in options:
                raise ctx.fail(f"R.function has no argument '{keyword.arg}'", keyword)
            if not (isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, bool)):
                raise ctx.fail(f"{keyword.arg}= must be True or False", keyword.value)
            options[keyword.arg] = keyword.value.value
    return options["pure"], options["private"]


def symbolic_declaration(ctx: ParseContext, value: ast.expr) -> tir.Var | None:
    """The variable that `T.int64()` (or `T.int32()`, `T.int64(is_size_var=True)`) declares."""
    if not (isinstance(value, ast.Call) and not value.args):
        return None
    dialect = ctx.dialect_of(value.func)
    if dialect is None or dialect[0] != "tir" or not is_known_dtype(dialect[1]):
        return None
    if any(k.arg != "is_size_var" for k in value.keywords):
        return None
    size_var = any(isinstance(k.value, ast.Constant) and k.value.value is True for k in value.keywords)
    return (tir.SizeVar if size_var else tir.Var)("", dialect[1])


class RelaxFunctionParser(ExprParser):
    def __init__(self, ctx: ParseContext, parent_scope: Scope, module_symbols: dict[str, str] | None = None):
        self.ctx = ctx
        self.scope = parent_scope.child()
        self.symbolic_scope = self.scope
        self.string_symbols = {}
        self.attrs: dict = {}
        # Symbolic names declared at module level get a variable of their own in each function.
        for name, dtype in (module_symbols or {}).items():
            self.scope.define(name, tir.Var(name, dtype))

    # -- the function ------------------------------------------------------------------
    def parse_function(self, func_def: ast.FunctionDef, decorator: ast.expr, top_level: bool) -> ir.Function:
        pure, private = function_options(self.ctx, decorator)
        self._declare_symbolic_prelude(func_def.body)
        params = self._params(func_def)
        ret = None
        if func_def.returns is not None:
            ret = self._guarded(lambda: self.struct_info(func_def.returns))
        blocks, result = self._function_body(func_def)
        attrs = {"global_symbol": func_def.name} if top_level and not private else {}
        attrs.update(self.attrs)
        body = ir.SeqExpr(blocks, result, span=self.ctx.span(func_def))
        return ir.Function(tuple(params), body, ret, pure, ir.FrozenDict(attrs) if attrs else ir.EMPTY,
                           span=self.ctx.span(func_def))

    def _guarded(self, read):
        try:
            return read()
        except ParseAbort:
            return None

    def _declare_symbolic_prelude(self, body: list[ast.stmt]) -> None:
        # TVM prints `n = T.int64()` at the top of the body, but the parameters use n.
        for stmt in body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            declared = symbolic_declaration(self.ctx, stmt.value)
            if declared is not None:
                name = stmt.targets[0].id
                self.scope.define(name, declared.with_fields(name=name, span=self.ctx.span(stmt.targets[0])))

    def _params(self, func_def: ast.FunctionDef) -> list[ir.Var]:
        arguments = func_def.args
        for extra in (arguments.vararg, arguments.kwarg, *arguments.kwonlyargs, *arguments.defaults):
            if extra is not None:
                self.ctx.error("Relax function parameters must be plain names with struct info", extra)
        params = []
        for arg in (*arguments.posonlyargs, *arguments.args):
            info = None
            if arg.annotation is None:
                self.ctx.error(f"parameter '{arg.arg}' needs a struct info annotation such as R.Tensor(...)", arg)
            else:
                info = self._guarded(lambda: self.struct_info(arg.annotation))
            var = ir.Var(arg.arg, info, span=self.ctx.span(arg))
            self.scope.define(arg.arg, var)
            params.append(var)
        return params

    def _function_body(self, func_def: ast.FunctionDef) -> tuple[tuple, ir.Expr]:
        builder = _Blocks()
        result = None
        returned = False
        for stmt in func_def.body:
            if returned:
                self.ctx.error("statement after return is never reached", stmt)
                break
            if isinstance(stmt, ast.Return):
                returned = True
                if stmt.value is None:
                    self.ctx.error("a Relax function must return a value", stmt)
                    continue
                result = self._guarded(lambda: self.expr(stmt.value))
                continue
            self._statement(stmt, builder, None, top_level=True)
        if not returned:
            raise self.ctx.fail(f"function '{func_def.name}' has no return statement", func_def)
        if result is None:
            raise ParseAbort("return value has errors")
        return builder.finish(), result

    # -- statements ------------------------------------------------------------------------
    def _statement(self, stmt: ast.stmt, builder: _Blocks, dataflow: _Dataflow | None, top_level: bool = False) -> None:
        try:
            if isinstance(stmt, ast.Expr):
                self._expression_statement(stmt, builder, dataflow, top_level)
            elif isinstance(stmt, ast.Assign):
                self._assign(stmt, builder, dataflow)
            elif isinstance(stmt, ast.AnnAssign):
                self._ann_assign(stmt, builder, dataflow)
            elif isinstance(stmt, ast.With):
                self._with(stmt, builder, dataflow)
            elif isinstance(stmt, ast.If):
                self._if(stmt, builder, dataflow)
            elif isinstance(stmt, ast.FunctionDef):
                self._local_function(stmt, builder, dataflow)
            elif isinstance(stmt, ast.Return):
                where = "a dataflow block" if dataflow is not None else "a branch"
                raise self.ctx.fail(f"return is not allowed inside {where}", stmt)
            elif not isinstance(stmt, ast.Pass):
                raise self.ctx.fail(f"unsupported statement in a Relax function: {_statement_kind(stmt)}", stmt)
        except ParseAbort:
            # Later statements may use the names this one meant to define.
            for name in _assigned_names(stmt):
                if self.scope.lookup(name) is None:
                    self.scope.define(name, ir.Var(name))

    def _expression_statement(self, stmt: ast.Expr, builder: _Blocks, dataflow, top_level: bool) -> None:
        value = stmt.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return  # a docstring
        dialect = self.ctx.dialect_of(value.func) if isinstance(value, ast.Call) else None
        if dialect == ("relax", "func_attr"):
            if not top_level:
                raise self.ctx.fail("R.func_attr(...) must be a statement of the function body", stmt)
            if len(value.args) != 1 or value.keywords or not isinstance(value.args[0], ast.Dict):
                raise self.ctx.fail("R.func_attr takes one dictionary: R.func_attr({\"key\": value})", value)
            self.attrs.update(attr_dict(value.args[0], self.ctx, self._non_literal_attr))
            return
        if dialect == ("relax", "output"):
            raise self.ctx.fail("R.output(...) must be the last statement of a `with R.dataflow():` block", value)
        expr = self.expr(value)
        builder.add(ir.VarBinding(self._make_var("_", None, stmt, dataflow), expr, span=self.ctx.span(stmt)))

    def _assign(self, stmt: ast.Assign, builder: _Blocks, dataflow) -> None:
        target = self._single_target(stmt.targets)
        if symbolic_declaration(self.ctx, stmt.value) is not None:
            return  # declared before the parameters were read
        if isinstance(stmt.value, ast.Name) and isinstance(self.scope.lookup(stmt.value.id), ModuleRef):
            self.scope.define(target.id, self.scope.lookup(stmt.value.id))
            return
        self._bind(stmt, target, None, stmt.value, builder, dataflow)

    def _ann_assign(self, stmt: ast.AnnAssign, builder: _Blocks, dataflow) -> None:
        target = self._single_target([stmt.target])
        if stmt.value is None:
            raise self.ctx.fail(f"'{target.id}' is declared without a value", stmt)
        self._bind(stmt, target, stmt.annotation, stmt.value, builder, dataflow)

    def _single_target(self, targets: list[ast.expr]) -> ast.Name:
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            where = targets[-1] if len(targets) > 1 else targets[0]
            raise self.ctx.fail("assign to one name; unpack a tuple with x[0], x[1], ...", where)
        return targets[0]

    def _bind(self, stmt, target: ast.Name, annotation, value_node, builder: _Blocks, dataflow) -> None:
        binding = self._binding(stmt, target, annotation, value_node, dataflow)
        builder.add(binding)
        self.scope.define(target.id, binding.var)

    def _binding(self, stmt, target: ast.Name, annotation, value_node, dataflow) -> ir.Binding:
        info = self.struct_info(annotation) if annotation is not None else None
        span = self.ctx.span(stmt)
        if isinstance(value_node, ast.Call) and self.ctx.dialect_of(value_node.func) == ("relax", "match_cast"):
            value, cast_info = self._match_cast(value_node)
            var = self._make_var(target.id, info if info is not None else cast_info, target, dataflow)
            return ir.MatchCast(var, value, cast_info, span=span)
        value = self.expr(value_node)
        return ir.VarBinding(self._make_var(target.id, info, target, dataflow), value, span=span)

    def _match_cast(self, node: ast.Call) -> tuple[ir.Expr, ir.StructInfo]:
        if len(node.args) != 2 or node.keywords:
            raise self.ctx.fail("R.match_cast takes a value and the struct info to match: R.match_cast(x, R.Tensor(...))", node)
        return self.expr(node.args[0]), self.struct_info(node.args[1])

    def _make_var(self, name: str, info, node: ast.AST, dataflow: _Dataflow | None) -> ir.Var:
        kind = ir.DataflowVar if dataflow is not None and name not in dataflow.outputs else ir.Var
        return kind(name, info, span=self.ctx.span(node))

    # -- with R.dataflow() ------------------------------------------------------------------
    def _with(self, stmt: ast.With, builder: _Blocks, dataflow) -> None:
        item = stmt.items[0].context_expr if len(stmt.items) == 1 else None
        is_dataflow = (
            isinstance(item, ast.Call) and not item.args and not item.keywords
            and self.ctx.dialect_of(item.func) == ("relax", "dataflow")
        )
        if not is_dataflow or stmt.items[0].optional_vars is not None:
            raise self.ctx.fail("only `with R.dataflow():` blocks are allowed in a Relax function", stmt)
        if dataflow is not None:
            raise self.ctx.fail("dataflow blocks cannot be nested", stmt)
        body, output_call = stmt.body, None
        last = body[-1]
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and \
                self.ctx.dialect_of(last.value.func) == ("relax", "output"):
            body, output_call = body[:-1], last.value
        state = _Dataflow(self._output_names(output_call) if output_call is not None else {})
        outer, self.scope = self.scope, self.scope.child()
        block_scope = self.scope
        bindings = _Blocks()
        try:
            for inner in body:
                self._dataflow_statement(inner, bindings, state)
        finally:
            self.scope = outer
        for name, node in state.outputs.items():
            var = block_scope.names.get(name)
            if not isinstance(var, ir.Var):
                self.ctx.error(f"R.output of '{name}', which is not defined in this dataflow block", node)
                var = ir.Var(name)
            outer.define(name, var)
        builder.add_dataflow(ir.DataflowBlock(tuple(bindings.bindings), span=self.ctx.span(stmt)))

    def _dataflow_statement(self, stmt: ast.stmt, bindings: _Blocks, state: _Dataflow) -> None:
        if isinstance(stmt, (ast.If, ast.With)):
            kind = "if statements" if isinstance(stmt, ast.If) else "nested blocks"
            self.ctx.error(f"{kind} are not allowed inside a dataflow block", stmt)
            return
        self._statement(stmt, bindings, state)

    def _output_names(self, call: ast.Call) -> dict[str, ast.expr]:
        outputs: dict[str, ast.expr] = {}
        if call.keywords:
            self.ctx.error("R.output takes only variables", call.keywords[0])
        for arg in call.args:
            if isinstance(arg, ast.Name):
                outputs[arg.id] = arg
            else:
                self.ctx.error("R.output takes only variable names", arg)
        return outputs

    # -- if / else ----------------------------------------------------------------------------
    def _if(self, stmt: ast.If, builder: _Blocks, dataflow) -> None:
        name, value, info, target = self._if_expr(stmt)
        var = ir.Var(name, info, span=self.ctx.span(target))
        builder.add(ir.VarBinding(var, value, span=self.ctx.span(stmt)))
        self.scope.define(name, var)

    def _if_expr(self, stmt: ast.If) -> tuple[str, ir.If, ir.StructInfo | None, ast.AST]:
        if not stmt.orelse:
            raise self.ctx.fail("an if statement in a Relax function needs an else branch", stmt)
        cond = self._guarded(lambda: self.expr(stmt.test))
        then_branch = self._branch(stmt.body)
        else_branch = self._branch(stmt.orelse)
        if then_branch is None or else_branch is None or cond is None:
            raise ParseAbort("if statement has errors")
        if then_branch.name != else_branch.name:
            raise self.ctx.fail(
                f"both branches must end by assigning the same variable, but the then branch assigns"
                f" '{then_branch.name}' and the else branch '{else_branch.name}'",
                else_branch.target,
                (self.ctx.note(f"'{then_branch.name}' assigned here", then_branch.target),),
            )
        info = then_branch.struct_info if then_branch.struct_info is not None else else_branch.struct_info
        value = ir.If(
            cond,
            ir.SeqExpr(then_branch.blocks, then_branch.value, span=self.ctx.span(stmt.body[0])),
            ir.SeqExpr(else_branch.blocks, else_branch.value, span=self.ctx.span(stmt.orelse[0])),
            span=self.ctx.span(stmt),
        )
        return then_branch.name, value, info, then_branch.target

    def _branch(self, stmts: list[ast.stmt]) -> _BranchResult | None:
        outer, self.scope = self.scope, self.scope.child()
        try:
            builder = _Blocks()
            for stmt in stmts[:-1]:
                self._statement(stmt, builder, None)
            return self._branch_result(stmts[-1], builder)
        except ParseAbort:
            return None
        finally:
            self.scope = outer

    def _branch_result(self, last: ast.stmt, builder: _Blocks) -> _BranchResult:
        if isinstance(last, ast.If):
            name, value, info, target = self._if_expr(last)
            return _BranchResult(builder.finish(), name, value, info, target)
        if isinstance(last, ast.Assign):
            target, annotation = self._single_target(last.targets), None
        elif isinstance(last, ast.AnnAssign) and last.value is not None:
            target, annotation = self._single_target([last.target]), last.annotation
        else:
            raise self.ctx.fail("a branch must end by assigning the result of the if: `r = ...`", last)
        binding = self._binding(last, target, annotation, last.value, None)
        if isinstance(binding, ir.MatchCast):
            # The cast must still happen: keep it and let the branch yield its variable.
            builder.add(binding)
            return _BranchResult(builder.finish(), target.id, binding.var, binding.var.struct_info, target)
        return _BranchResult(builder.finish(), target.id, binding.value, binding.var.struct_info, target)

    # -- local functions ---------------------------------------------------------------------
    def _local_function(self, stmt: ast.FunctionDef, builder: _Blocks, dataflow) -> None:
        decorator = stmt.decorator_list[0] if len(stmt.decorator_list) == 1 else None
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if decorator is None or self.ctx.dialect_of(target) != ("relax", "function"):
            raise self.ctx.fail("a function inside a Relax function must be decorated with @R.function", stmt)
        var = self._make_var(stmt.name, None, stmt, dataflow)
        self.scope.define(stmt.name, var)  # a local function may call itself
        inner = RelaxFunctionParser(self.ctx, self.scope)
        func = inner.parse_function(stmt, decorator, top_level=False)
        builder.add(ir.VarBinding(var, func, span=self.ctx.span(stmt)))


def _assigned_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Assign):
        return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    if isinstance(stmt, ast.FunctionDef):
        return [stmt.name]
    if isinstance(stmt, ast.If):
        last = stmt.body[-1] if stmt.body else None
        return _assigned_names(last) if last is not None else []
    if isinstance(stmt, ast.With) and stmt.body:
        last = stmt.body[-1]
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
            return [a.id for a in last.value.args if isinstance(a, ast.Name)]
    return []


_STATEMENT_KINDS = {
    ast.For: "'for' loop", ast.While: "'while' loop", ast.Try: "'try' statement",
    ast.Import: "import", ast.ImportFrom: "import", ast.ClassDef: "class definition",
    ast.AugAssign: "augmented assignment", ast.Delete: "'del' statement", ast.Raise: "'raise' statement",
    ast.Global: "'global' statement", ast.Nonlocal: "'nonlocal' statement", ast.Assert: "'assert' statement",
}


def _statement_kind(stmt: ast.stmt) -> str:
    return _STATEMENT_KINDS.get(type(stmt), f"'{_describe(stmt)}'")
