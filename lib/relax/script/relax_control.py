"""Control flow in Relax function bodies: `with R.dataflow():` blocks and if/else.

    with R.dataflow():               a DataflowBlock: its variables are DataflowVars,
        ...                          except those R.output lists, which stay visible
        R.output(a, b)               after the block
    if c: ... else: ...              both branches end by assigning the same name, which
                                     becomes the variable bound to the If (TVM's rule);
                                     each branch is a SeqExpr that yields that value,
                                     bound first to `r_then` / `r_else` unless it is a
                                     variable or a constant

The statements inside are read by the function parser (relax_parser), which this
mixin is part of.
"""

from __future__ import annotations

import ast
from dataclasses import field

from .. import ir
from ..records import record
from .context import ParseAbort


@record(mutable=True)
class BindingBlocks:
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


@record(mutable=True)
class DataflowState:
    """The dataflow block being parsed: the names its R.output makes visible after it,
    and the assignments that define them (the last one of each name; an earlier
    binding of the same name stays a DataflowVar, as in TVM)."""

    outputs: dict[str, ast.expr]
    output_targets: set[int] = field(default_factory=set)  # ids of the assignment targets

    def is_output(self, target: ast.AST) -> bool:
        return id(target) in self.output_targets


def _last_assignments(body: list[ast.stmt], names: dict[str, ast.expr]) -> set[int]:
    last: dict[str, ast.AST] = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            last[stmt.targets[0].id] = stmt.targets[0]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            last[stmt.target.id] = stmt.target
        elif isinstance(stmt, ast.FunctionDef):
            last[stmt.name] = stmt
    return {id(target) for name, target in last.items() if name in names}


@record(mutable=True)
class _BranchResult:
    blocks: tuple
    name: str
    value: ir.Expr
    struct_info: ir.StructInfo | None
    target: ast.AST


class ControlFlowParser:
    """Reads dataflow blocks and if/else; expects the statement and binding readers
    of RelaxFunctionParser (`_statement`, `_binding`, `_single_target`, `_guarded`)."""

    def _with(self, stmt: ast.With, builder: BindingBlocks, dataflow) -> None:
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
        outputs = self._output_names(output_call) if output_call is not None else {}
        state = DataflowState(outputs, _last_assignments(body, outputs))
        outer, self.scope = self.scope, self.scope.child()
        block_scope = self.scope
        bindings = BindingBlocks()
        try:
            for inner in body:
                self._dataflow_statement(inner, bindings, state)
        finally:
            self.scope = outer
        for name, var in block_scope.names.items():
            if name not in state.outputs and isinstance(var, ir.Var):
                self.hidden_names[name] = ("it is local to its dataflow block; list it in R.output(...)", var.span)
        for name, node in state.outputs.items():
            var = block_scope.names.get(name)
            if not isinstance(var, ir.Var):
                self.ctx.error(f"R.output of '{name}', which is not defined in this dataflow block", node)
                var = ir.Var(name)
            outer.define(name, var)
        builder.add_dataflow(ir.DataflowBlock(tuple(bindings.bindings), span=self.ctx.span(stmt)))

    def _dataflow_statement(self, stmt: ast.stmt, bindings: BindingBlocks, state: DataflowState) -> None:
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
    def _if(self, stmt: ast.If, builder: BindingBlocks, dataflow) -> None:
        name, value, info, target = self._if_expr(stmt)
        var = ir.Var(name, info, span=self.ctx.span(target))
        builder.add(ir.VarBinding(var, value, span=self.ctx.span(stmt)))
        self.scope.define(name, var)

    def _if_expr(self, stmt: ast.If) -> tuple[str, ir.If, ir.StructInfo | None, ast.AST]:
        if not stmt.orelse:
            raise self.ctx.fail("an if statement in a Relax function needs an else branch", stmt)
        cond = self._guarded(lambda: self.expr(stmt.test))
        then_branch = self._branch(stmt.body, "then")
        else_branch = self._branch(stmt.orelse, "else")
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

    def _branch(self, stmts: list[ast.stmt], suffix: str) -> _BranchResult | None:
        outer, self.scope = self.scope, self.scope.child()
        branch_scope = self.scope
        try:
            builder = BindingBlocks()
            for stmt in stmts[:-1]:
                self._statement(stmt, builder, None)
            return self._branch_result(stmts[-1], builder, suffix)
        except ParseAbort:
            return None
        finally:
            self.scope = outer
            for name, var in branch_scope.names.items():
                if isinstance(var, ir.Var):
                    self.hidden_names.setdefault(name, (f"it is local to the {suffix} branch of an if", var.span))

    def _branch_result(self, last: ast.stmt, builder: BindingBlocks, suffix: str) -> _BranchResult:
        if isinstance(last, ast.If):
            name, value, info, target = self._if_expr(last)
        elif isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
            # A call made for its effect (R.print): the if yields its result, bound to `_`.
            name, value, info, target = "_", self.expr(last.value), None, last
        else:
            if isinstance(last, ast.Assign):
                target, annotation = self._single_target(last.targets), None
            elif isinstance(last, ast.AnnAssign) and last.value is not None:
                target, annotation = self._single_target([last.target]), last.annotation
            else:
                raise self.ctx.fail("a branch must end by assigning the result of the if: `r = ...`", last)
            binding = self._binding(last, target, annotation, last.value, None)
            name, info = target.id, binding.var.struct_info
            if isinstance(binding, ir.MatchCast):
                # The cast must still happen: keep it and let the branch yield its variable.
                builder.add(binding)
                return _BranchResult(builder.finish(), name, binding.var, info, target)
            value = binding.value
        if not _is_leaf(value):
            # As TVM does, a computed result gets a variable of its own, `r_then` or `r_else`.
            var = ir.Var(f"{name}_{suffix}", info, span=self.ctx.span(target))
            builder.add(ir.VarBinding(var, value, span=self.ctx.span(last)))
            value = var
        return _BranchResult(builder.finish(), name, value, info, target)


_LEAVES = (ir.Var, ir.Constant, ir.ShapeExpr, ir.PrimValue, ir.StringImm, ir.DataTypeImm, ir.GlobalVar, ir.ExternFunc)


def _is_leaf(value: ir.Expr) -> bool:
    """Values a SeqExpr may yield without binding them first (a tuple of such, too)."""
    if isinstance(value, ir.Tuple):
        return all(_is_leaf(field) for field in value.fields)
    return isinstance(value, _LEAVES)
