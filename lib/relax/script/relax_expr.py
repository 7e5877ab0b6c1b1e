"""Relax expressions from TVMScript syntax trees: `R.add(x, R.const(1, "float32"))`.

Names resolve through the current Scope: Relax variables, symbolic variables (which
become PrimValues in expression position) and the module (`cls.f` is a GlobalVar).
`R.<name>(...)` is a call of operator "relax.<name>" with its positional arguments
as Relax expressions and its keyword arguments kept as attributes; the forms that
TVM represents differently (R.call_tir, R.const, R.shape, ...) are in relax_special.
Python literals in expression position are Relax values: an int is a PrimValue of
an int64, a float a PrimValue of a float64, a string a StringImm, a tuple or list an
ir.Tuple.
"""

from __future__ import annotations

import ast

from .. import ir
from ..ir import tir
from .context import ModuleRef, ParseAbort
from .literal_limits import require_fits
from .relax_literals import attr_value
from .relax_special import SPECIAL_FORMS, bind_arguments
from .ast_nodes import METADATA_MESSAGE, describe, is_metadata
from .relax_struct_info import StructInfoParser

# Python operators on Relax values are the elementwise operators, as TVM's do.
_BINARY_OPERATORS = {
    ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide",
    ast.FloorDiv: "floor_divide", ast.Mod: "floor_mod", ast.Pow: "power",
    ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
}
_COMPARISONS = {
    ast.Lt: "less", ast.LtE: "less_equal", ast.Gt: "greater", ast.GtE: "greater_equal",
    ast.Eq: "equal", ast.NotEq: "not_equal",
}


class ExprParser(StructInfoParser):
    """Reads Relax expressions in `self.scope`."""

    # -- dispatch ----------------------------------------------------------------
    def expr(self, node: ast.expr) -> ir.Expr:
        reader = _READERS.get(type(node))
        if reader is None:
            raise self.ctx.fail(f"'{describe(node)}' is not a Relax expression", node)
        return reader(self, node)

    def _name(self, node: ast.Name) -> ir.Expr:
        found = self.scope.lookup(node.id)
        if isinstance(found, ir.Expr):
            return found
        if isinstance(found, tir.PrimExpr):
            return ir.PrimValue(found, span=self.ctx.span(node))
        if isinstance(found, ModuleRef):
            raise self.ctx.fail(f"the module '{node.id}' is not a value; name one of its functions: {node.id}.f", node)
        if found is None:
            raise self.undefined(node.id, node)
        raise self.ctx.fail(f"'{node.id}' is not a Relax value", node)

    def _constant(self, node: ast.Constant) -> ir.Expr:
        value, span = node.value, self.ctx.span(node)
        if isinstance(value, bool):
            return ir.PrimValue(tir.IntImm("bool", int(value), span=span), span=span)
        if isinstance(value, int):
            require_fits(self.ctx, node, value, "int64")
            return ir.PrimValue(tir.IntImm("int64", value, span=span), span=span)
        if isinstance(value, float):
            return ir.PrimValue(tir.FloatImm("float64", value, span=span), span=span)
        if isinstance(value, str):
            return ir.StringImm(value, span=span)
        raise self.ctx.fail(f"'{describe(node)}' is not a Relax expression", node)

    def _tuple(self, node: ast.Tuple | ast.List) -> ir.Expr:
        return ir.Tuple(self.exprs(node.elts), span=self.ctx.span(node))

    def _subscript(self, node: ast.Subscript) -> ir.Expr:
        if is_metadata(node):
            raise self.ctx.fail(METADATA_MESSAGE, node)
        tuple_value = self.expr(node.value)
        index = node.slice
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int) and not isinstance(index.value, bool)):
            raise self.ctx.fail("a tuple index must be a non-negative integer literal", index)
        if index.value < 0:
            raise self.ctx.fail("a tuple index must be a non-negative integer literal", index)
        return ir.TupleGetItem(tuple_value, index.value, span=self.ctx.span(node))

    def _attribute(self, node: ast.Attribute) -> ir.Expr:
        global_var = self.global_var(node)
        if global_var is not None:
            return global_var
        dialect = self.ctx.dialect_of(node)
        if dialect is not None:
            raise self.ctx.fail(f"'{describe(node)}' is not a Relax value; did you mean to call it?", node)
        raise self.ctx.fail(f"'{describe(node)}' is not a Relax expression", node)

    def global_var(self, node: ast.expr) -> ir.GlobalVar | None:
        """`cls.f` or `Module.f` as the module's GlobalVar; None if `node` is not of that form."""
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            return None
        module = self.scope.lookup(node.value.id)
        if module is None and self.ctx.dialect_of(node) is None:
            raise self.undefined(node.value.id, node.value)
        if not isinstance(module, ModuleRef):
            return None
        found = module.global_vars.get(node.attr)
        if found is None:
            raise self.ctx.fail(f"module '{module.name}' has no function '{node.attr}'", node)
        return found

    def _operator(self, node: ast.BinOp | ast.UnaryOp | ast.Compare | ast.BoolOp) -> ir.Expr:
        """Arithmetic over Relax values is an operator call; over symbolic variables
        and literals it is a PrimExpr, held by a PrimValue."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = node.operand
            if isinstance(operand, ast.Constant) and type(operand.value) in (int, float):
                sign = -1 if isinstance(node.op, ast.USub) else 1
                return self._constant(ast.copy_location(ast.Constant(sign * operand.value), node))
        if not self._mentions_relax_value(node):
            value = self.prim_expr(node)
            return ir.PrimValue(value, span=self.ctx.span(node))
        span = self.ctx.span(node)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPERATORS:
            op = ir.Op("relax." + _BINARY_OPERATORS[type(node.op)])
            return ir.Call(op, (self.expr(node.left), self.expr(node.right)), span=span)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return ir.Call(ir.Op("relax.negative"), (self.expr(node.operand),), span=span)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARISONS:
            op = ir.Op("relax." + _COMPARISONS[type(node.ops[0])])
            return ir.Call(op, (self.expr(node.left), self.expr(node.comparators[0])), span=span)
        raise self.ctx.fail(f"operator in '{describe(node)}' is not supported on Relax values", node)

    def _mentions_relax_value(self, node: ast.AST) -> bool:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and isinstance(self.scope.lookup(inner.id), ir.Expr):
                return True
            if isinstance(inner, ast.Call):
                dialect = self.ctx.dialect_of(inner.func)
                if dialect is None or dialect[0] != "tir":
                    return True
        return False

    def exprs(self, nodes: list[ast.expr]) -> tuple[ir.Expr, ...]:
        """Reads every node, so that independent errors in several arguments are all
        reported; abandons the construct afterwards if any failed."""
        values, failed = [], False
        for node in nodes:
            try:
                values.append(self.expr(node))
            except ParseAbort:
                failed = True
        if failed:
            raise ParseAbort("an argument has errors")
        return tuple(values)

    # -- calls -------------------------------------------------------------------------
    def _call(self, node: ast.Call) -> ir.Expr:
        dialect = self.ctx.dialect_of(node.func)
        if dialect is not None:
            kind, name = dialect
            if kind == "relax":
                special = SPECIAL_FORMS.get(name)
                if special is not None:
                    return special(self, node)
                if name in STATEMENT_ONLY:
                    raise self.ctx.fail(STATEMENT_ONLY[name], node)
                if self.is_struct_info(node):
                    raise self.ctx.fail(f"R.{name}(...) is struct info, not a value", node)
                return self.operator_call(node, "relax." + name)
            if kind == "tir":
                value = self.prim_expr(node)
                return ir.PrimValue(value, span=self.ctx.span(node))
            raise self.ctx.fail(f"'{describe(node.func)}' cannot be called in a Relax function", node.func)
        method = self._method_call(node)
        if method is not None:
            return method
        callee = self.global_var(node.func)
        if callee is None:
            callee = self.expr(node.func)
            if not isinstance(callee, (ir.Var, ir.GlobalVar, ir.ExternFunc)):
                raise self.ctx.fail(f"'{describe(node.func)}' is not callable", node.func)
        args = self.exprs(self.positional(node))
        attrs, sinfo_args = self.keyword_attrs(node)
        return ir.Call(callee, args, attrs, sinfo_args, span=self.ctx.span(node))

    def _method_call(self, node: ast.Call) -> ir.Call | None:
        """`x.astype("float16")`: the one method of Relax values TVM's printer and
        tests use, the same call as R.astype(x, dtype="float16")."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "astype" and isinstance(func.value, ast.Name)):
            return None
        receiver = self.scope.lookup(func.value.id)
        if not isinstance(receiver, ir.Var):
            return None
        bound = bind_arguments(self, node, "astype", ("dtype",), ("dtype",))
        attrs = ir.FrozenDict({"dtype": self.dtype_string(bound["dtype"])})
        span = self.ctx.span(node)
        return ir.Call(ir.Op("relax.astype", span=span), (receiver,), attrs, span=span)

    def operator_call(self, node: ast.Call, op_name: str, first_extern: bool = False) -> ir.Call:
        """A call of a registered operator: positional arguments are Relax values,
        keywords are attributes, `sinfo_args=` gives the call's struct info args."""
        positional = self.positional(node)
        if first_extern and positional and isinstance(positional[0], ast.Constant) and isinstance(positional[0].value, str):
            args = (ir.ExternFunc(positional[0].value, span=self.ctx.span(positional[0])), *self.exprs(positional[1:]))
        else:
            args = self.exprs(positional)
        attrs, sinfo_args = self.keyword_attrs(node)
        # The operator's name starts where the call does: one span serves both.
        span = self.ctx.span(node)
        return ir.Call(ir.Op(op_name, span=span), tuple(args), attrs, sinfo_args, span=span)

    def positional(self, node: ast.Call) -> list[ast.expr]:
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.ctx.fail("'*' arguments are not supported", arg)
        return node.args

    def keyword_attrs(self, node: ast.Call, skip: tuple[str, ...] = ()) -> tuple[ir.FrozenDict, tuple]:
        attrs = {}
        sinfo_args: tuple = ()
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.ctx.fail("'**' arguments are not supported", keyword)
            if keyword.arg in skip:
                continue
            if keyword.arg in ("sinfo_args", "ty_args"):  # TVM 0.27 spells it ty_args
                sinfo_args = self.sinfo_args(keyword.value)
            else:
                attrs[keyword.arg] = self.attr_value(keyword.value)
        return (ir.FrozenDict(attrs) if attrs else ir.EMPTY), sinfo_args

    def sinfo_args(self, node: ast.expr) -> tuple:
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.struct_info(e) for e in node.elts)
        return (self.struct_info(node),)

    def attr_value(self, node: ast.expr):
        """A keyword argument: a Python literal, a PrimExpr (`T.int64(3)`), struct info,
        or a Relax value, kept as it is for the operator registry to normalize."""
        return attr_value(node, self.ctx, self._non_literal_attr)

    def _non_literal_attr(self, node: ast.expr):
        target = node.func if isinstance(node, ast.Call) else node
        dialect = self.ctx.dialect_of(target)
        if dialect is not None and dialect[0] == "relax" and self.is_struct_info(node):
            return self.struct_info(node)
        if isinstance(node, ast.Call) and dialect == ("tir", "index_map"):
            return self.index_map(node)
        if isinstance(node, ast.Call) and dialect is not None and dialect[0] == "tir":
            return self.prim_expr(node)
        if isinstance(node, ast.Name):
            found = self.scope.lookup(node.id)
            if isinstance(found, tir.PrimExpr):
                return found
        return self.expr(node)

    def index_map(self, node: ast.Call) -> ir.FrozenDict:
        """`T.index_map(lambda i, j: (j, i))` (an attribute of R.layout_transform) as
        {"initial_indices": (i, j), "final_indices": (j, i)} over fresh variables."""
        index_dtype = "int64"
        for keyword in node.keywords:
            if keyword.arg != "index_dtype":
                raise self.ctx.fail(f"T.index_map has no argument '{keyword.arg}'", keyword)
            index_dtype = self.dtype_string(keyword.value)
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Lambda):
            raise self.ctx.fail("T.index_map takes one lambda: T.index_map(lambda i, j: (j, i))", node)
        mapping = node.args[0]
        saved, self.scope = self.scope, self.scope.child()
        try:
            initial = tuple(tir.Var(a.arg, index_dtype, span=self.ctx.span(a)) for a in mapping.args.args)
            for var in initial:
                self.scope.define(var.name, var)
            results = mapping.body.elts if isinstance(mapping.body, (ast.Tuple, ast.List)) else [mapping.body]
            final = tuple(self.prim_expr(result) for result in results)
        finally:
            self.scope = saved
        return ir.FrozenDict({"initial_indices": initial, "final_indices": final})


STATEMENT_ONLY = {
    "func_attr": "R.func_attr(...) must be a statement at the start of a function body",
    "output": "R.output(...) must be the last statement of a dataflow block",
    "dataflow": "R.dataflow() opens a block: write `with R.dataflow():`",
    "match_cast": "R.match_cast(...) must be bound to a variable: `y = R.match_cast(x, ...)`",
    "function": "R.function is a decorator: write `@R.function` above a def",
}

_READERS = {
    ast.Name: ExprParser._name,
    ast.Constant: ExprParser._constant,
    ast.Tuple: ExprParser._tuple,
    ast.List: ExprParser._tuple,
    ast.Subscript: ExprParser._subscript,
    ast.Attribute: ExprParser._attribute,
    ast.Call: ExprParser._call,
    ast.BinOp: ExprParser._operator,
    ast.UnaryOp: ExprParser._operator,
    ast.Compare: ExprParser._operator,
    ast.BoolOp: ExprParser._operator,
}
