"""Relax functions from TVMScript: `@R.function def f(x: R.Tensor(...)) -> ...:`.

A function body is a list of statements that become binding blocks:

    x: ANNOT = expr / x = expr       a VarBinding (struct info from the annotation, or None)
    y = R.match_cast(x, SINFO)       a MatchCast binding
    with R.dataflow(): ... R.output(a, b)
                                     a DataflowBlock (see relax_control)
    if c: ...  else: ...             a variable bound to an If (see relax_control)
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

from .. import ir
from ..ir import tir
from ..ir.struct_info_check import describe as describe_struct_info
from ..ir.structural import structural_equal
from .context import ModuleRef, ParseAbort, ParseContext, Scope
from .prim_expr import is_known_dtype
from .relax_control import BindingBlocks, ControlFlowParser, DataflowState
from .relax_expr import ExprParser
from .relax_literals import attr_dict
from .relax_special import bind_arguments
from .ast_nodes import describe


def function_options(ctx: ParseContext, decorator: ast.expr) -> tuple[bool, bool]:
    """(pure, private) from `@R.function`, `@R.function(private=True, pure=False)`."""
    # check_well_formed= only tells TVM's parser whether to run its checker.
    options = {"pure": True, "private": False, "check_well_formed": True}
    if isinstance(decorator, ast.Call):
        if decorator.args:
            raise ctx.fail("R.function takes only keyword arguments: pure=, private=", decorator.args[0])
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


def symbolic_declarations(ctx: ParseContext, stmt: ast.stmt) -> list[tir.Var] | None:
    """The variables that `n = T.int64()` or `n, m = T.int64(), T.int64()` declares,
    named; None if `stmt` is no such declaration."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, ast.Name):
        pairs = [(target, value)]
    elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        pairs = list(zip(target.elts, value.elts))
    else:
        return None
    declared = []
    for name, call in pairs:
        var = symbolic_declaration(ctx, call) if isinstance(name, ast.Name) else None
        if var is None:
            return None
        declared.append(var.with_fields(name=name.id, span=ctx.span(name)))
    return declared


class RelaxFunctionParser(ControlFlowParser, ExprParser):
    def __init__(self, ctx: ParseContext, parent_scope: Scope, module_symbols: dict[str, str] | None = None):
        self.ctx = ctx
        self.scope = parent_scope.child()
        self.symbolic_scope = self.scope
        self.string_symbols = {}
        self.hidden_names = {}
        self.attrs: dict = {}
        self.attrs_node: ast.expr | None = None  # the R.func_attr call, for errors
        # Symbolic names declared at module level get a variable of their own in each function.
        for name, dtype in (module_symbols or {}).items():
            self.scope.define(name, tir.Var(name, dtype))

    # -- the function ------------------------------------------------------------------
    def parse_function(self, func_def: ast.FunctionDef, decorator: ast.expr, top_level: bool,
                       on_signature=None) -> ir.Function:
        """The function `func_def` spells; on_signature(params, ret, pure), if given, runs
        between the signature and the body (a local function's own name is defined there)."""
        pure, private = function_options(self.ctx, decorator)
        self._declare_symbolic_prelude(func_def.body)
        self._declare_signature_strings(func_def)
        params = self._params(func_def)
        ret = None
        if func_def.returns is not None:
            ret = self._guarded(lambda: self.struct_info(func_def.returns))
        if on_signature is not None:
            on_signature(params, ret, pure)
        blocks, result = self._function_body(func_def)
        attrs = {"global_symbol": func_def.name} if top_level and not private else {}
        if private and "global_symbol" in self.attrs:
            self.ctx.error("a private function has no global symbol; drop private=True or the attribute",
                           self.attrs_node)
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
            for var in symbolic_declarations(self.ctx, stmt) or ():
                self.scope.define(var.name, var)

    def _declare_signature_strings(self, func_def: ast.FunctionDef) -> None:
        """Strings may name a symbolic variable before the parameter that defines it."""
        annotations = [a.annotation for a in (*func_def.args.posonlyargs, *func_def.args.args) if a.annotation]
        if func_def.returns is not None:
            annotations.append(func_def.returns)
        for annotation in annotations:
            self.declare_shape_strings(annotation)

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
        builder = BindingBlocks()
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
    def _statement(self, stmt: ast.stmt, builder: BindingBlocks, dataflow: DataflowState | None, top_level: bool = False) -> None:
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

    def _expression_statement(self, stmt: ast.Expr, builder: BindingBlocks, dataflow, top_level: bool) -> None:
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
            self.attrs_node = value
            return
        if dialect == ("relax", "output"):
            raise self.ctx.fail("R.output(...) must be the last statement of a `with R.dataflow():` block", value)
        expr = self.expr(value)
        builder.add(ir.VarBinding(self._make_var("_", None, stmt, dataflow), expr, span=self.ctx.span(stmt)))

    def _assign(self, stmt: ast.Assign, builder: BindingBlocks, dataflow) -> None:
        declared = symbolic_declarations(self.ctx, stmt)
        if declared is not None:
            # Those at the top of the body were declared before the parameters were read.
            for var in declared:
                known = self.scope.lookup(var.name)
                if not (isinstance(known, tir.Var) and known.name == var.name):
                    self.symbolic_scope.define(var.name, var)
            return
        target = self._single_target(stmt.targets)
        if isinstance(stmt.value, ast.Name) and isinstance(self.scope.lookup(stmt.value.id), ModuleRef):
            self.scope.define(target.id, self.scope.lookup(stmt.value.id))
            return
        self._bind(stmt, target, None, stmt.value, builder, dataflow)

    def _ann_assign(self, stmt: ast.AnnAssign, builder: BindingBlocks, dataflow) -> None:
        target = self._single_target([stmt.target])
        if stmt.value is None:
            raise self.ctx.fail(f"'{target.id}' is declared without a value", stmt)
        self._bind(stmt, target, stmt.annotation, stmt.value, builder, dataflow)

    def _single_target(self, targets: list[ast.expr]) -> ast.Name:
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            where = targets[-1] if len(targets) > 1 else targets[0]
            raise self.ctx.fail("assign to one name; unpack a tuple with x[0], x[1], ...", where)
        return targets[0]

    def _bind(self, stmt, target: ast.Name, annotation, value_node, builder: BindingBlocks, dataflow) -> None:
        binding = self._binding(stmt, target, annotation, value_node, dataflow)
        builder.add(binding)
        self.scope.define(target.id, binding.var)

    def _binding(self, stmt, target: ast.Name, annotation, value_node, dataflow) -> ir.Binding:
        info = self.struct_info(annotation) if annotation is not None else None
        span = self.ctx.span(stmt)
        if isinstance(value_node, ast.Call) and self.ctx.dialect_of(value_node.func) == ("relax", "match_cast"):
            value, cast_info = self._match_cast(value_node)
            if info is not None and not structural_equal(info, cast_info):
                # TVM's rule: the annotation would otherwise name symbolic variables that
                # nothing defines, R.Tensor((n, m)) = R.match_cast(x, R.Tensor((1, 1, 1)))
                raise self.ctx.fail(f"the annotation of '{target.id}' differs from the struct info of its"
                                    f" R.match_cast, {describe_struct_info(cast_info)}; write the same or"
                                    " leave the annotation out", annotation)
            var = self._make_var(target.id, info if info is not None else cast_info, target, dataflow)
            return ir.MatchCast(var, value, cast_info, span=span)
        value = self.expr(value_node)
        return ir.VarBinding(self._make_var(target.id, info, target, dataflow), value, span=span)

    def _match_cast(self, node: ast.Call) -> tuple[ir.Expr, ir.StructInfo]:
        if len(node.args) + len(node.keywords) != 2:
            raise self.ctx.fail("R.match_cast takes a value and the struct info to match: R.match_cast(x, R.Tensor(...))", node)
        # TVM 0.27 names the second parameter `ty`; older releases `struct_info`.
        bound = bind_arguments(self, node, "match_cast", ("value", "struct_info"), ("value",), ("ty",))
        info_node = bound.get("struct_info", bound.get("ty"))
        if info_node is None:
            raise self.ctx.fail("R.match_cast needs the struct info to match", node)
        return self.expr(bound["value"]), self.struct_info(info_node)

    def _make_var(self, name: str, info, node: ast.AST, dataflow: DataflowState | None) -> ir.Var:
        kind = ir.DataflowVar if dataflow is not None and not dataflow.is_output(node) else ir.Var
        return kind(name, info, span=self.ctx.span(node))

    # -- local functions ---------------------------------------------------------------------
    def _local_function(self, stmt: ast.FunctionDef, builder: BindingBlocks, dataflow) -> None:
        decorator = stmt.decorator_list[0] if len(stmt.decorator_list) == 1 else None
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if decorator is None or self.ctx.dialect_of(target) != ("relax", "function"):
            raise self.ctx.fail("a function inside a Relax function must be decorated with @R.function", stmt)
        defined: list[ir.Var] = []

        def define_own_name(params, ret, pure) -> None:
            # A local function may call itself: inside its body its name is a variable
            # whose struct info its signature gives (TVM prints recursion this way).
            info = None
            if ret is not None and all(p.struct_info is not None for p in params):
                info = ir.FuncStructInfo(tuple(p.struct_info for p in params), ret, pure)
            elif _calls_itself(stmt):
                self.ctx.error(f"local function '{stmt.name}' calls itself, so it needs a return annotation"
                               " such as -> R.Tensor((4,), \"float32\")", stmt)
            defined.append(self._make_var(stmt.name, info, stmt, dataflow))
            self.scope.define(stmt.name, defined[0])

        inner = RelaxFunctionParser(self.ctx, self.scope)
        func = inner.parse_function(stmt, decorator, top_level=False, on_signature=define_own_name)
        builder.add(ir.VarBinding(defined[0], func, span=self.ctx.span(stmt)))


def _calls_itself(func_def: ast.FunctionDef) -> bool:
    """Whether the body of `func_def` names the function itself."""
    return any(isinstance(node, ast.Name) and node.id == func_def.name
               for stmt in func_def.body for node in ast.walk(stmt))


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
    return _STATEMENT_KINDS.get(type(stmt), f"'{describe(stmt)}'")
