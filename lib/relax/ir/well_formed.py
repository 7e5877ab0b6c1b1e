"""The well-formedness checker: rules every module must keep between passes.

`check_well_formed(mod)` returns every violation as a Diagnostic (never only the
first), each at the span of the innermost node that has one. For Relax functions:

- every variable is defined before it is used, and defined only once;
- a DataflowVar is defined only inside a dataflow block and not used after it
  (TVM's rule: in a dataflow block, the bindings of plain Vars are the outputs);
- a function parameter is never a DataflowVar, and a dataflow block holds no `if`;
- every GlobalVar names a function of the module, a direct call of a Relax
  function passes one argument per parameter, and a function's global symbol
  (when it has one) is its name in the module;
- every symbolic variable is defined by the function's signature (a bare variable
  in a parameter's struct info) or by a match_cast before it is used;
- annotations do not contradict what a value plainly is (struct_info_check).

TIR functions are checked by well_formed_tir.
"""

from __future__ import annotations

from contextlib import contextmanager

from ..diagnostics import Diagnostic, DiagnosticError
from . import expr as rx
from . import struct_info as si
from . import tir_expr as tir
from .module import IRModule
from .node import Node
from .reporting_visitor import ReportingVisitor
from .struct_info_check import conflict, describe, known_struct_info
from .tir_stmt import PrimFunc
from .well_formed_tir import check_prim_func


def _bare_symbols(info: si.StructInfo | None) -> list[tir.Var]:
    """The TIR variables standing alone as a dimension or a prim value in `info`."""
    found: list[tir.Var] = []

    def add(values) -> None:
        found.extend(v for v in values or () if isinstance(v, tir.Var))

    def walk(item) -> None:
        if isinstance(item, si.TensorStructInfo):
            add(item.shape_values)
        elif isinstance(item, si.ShapeStructInfo):
            add(item.values)
        elif isinstance(item, si.PrimStructInfo):
            add((item.value,))
        elif isinstance(item, si.TupleStructInfo):
            for field in item.fields:
                walk(field)

    walk(info)
    return found


class _RelaxChecker(ReportingVisitor):
    def __init__(self, diagnostics: list[Diagnostic], functions: dict, name: str) -> None:
        super().__init__(diagnostics)
        self.functions = functions  # name -> Function | PrimFunc of the module
        self.function_names = set(functions)
        self.name = name
        self.visible: list[set[int]] = [set()]
        self.symbols: list[set[int]] = [set()]
        self.defined: set[int] = set()
        self.expired_dataflow: set[int] = set()
        self.dataflow: set[int] | None = None  # DataflowVars of the block being checked
        self.depth = 0
        self.in_attrs = False

    @contextmanager
    def _scope(self, symbols: bool = False):
        self.visible.append(set())
        if symbols:
            self.symbols.append(set())
        try:
            yield
        finally:
            self.visible.pop()
            if symbols:
                self.symbols.pop()

    def _is_visible(self, var: Node) -> bool:
        return any(id(var) in scope for scope in self.visible)

    def _is_symbol(self, var: tir.Var) -> bool:
        return any(id(var) in scope for scope in self.symbols)

    def define(self, var: rx.Var) -> None:
        if id(var) in self.defined:
            self.error(f"variable '{var.name_hint}' is defined twice",
                       notes=self.defined_here(var.name_hint, var, "first defined"))
        self.defined.add(id(var))
        self.visible[-1].add(id(var))
        if isinstance(var, rx.DataflowVar) and self.dataflow is not None:
            self.dataflow.add(id(var))

    def define_symbols(self, info: si.StructInfo | None) -> None:
        for var in _bare_symbols(info):
            if not self._is_symbol(var):
                self.symbols[-1].add(id(var))
        if info is not None:
            self.visit(info)

    # -- definitions ----------------------------------------------------------------

    def visit_Function(self, func: rx.Function) -> None:
        self.depth += 1
        saved_dataflow, self.dataflow = self.dataflow, None
        with self._scope(symbols=True):
            for param in func.params:
                if isinstance(param, rx.DataflowVar):
                    self.error(f"parameter '{param.name_hint}' must not be a dataflow variable")
                self.define_symbols(param.struct_info)
                self.define(param)
            if func.ret_struct_info is not None:
                self.visit(func.ret_struct_info)
            self.visit(func.body)
            self._check_return(func)
        self.dataflow = saved_dataflow
        self.depth -= 1

    def _check_return(self, func: rx.Function) -> None:
        result = func.body.body if isinstance(func.body, rx.SeqExpr) else func.body
        actual = known_struct_info(result)
        if conflict(func.ret_struct_info, actual):
            who = f"function '{self.name}'" if self.depth == 1 else "local function"
            self.error(f"{who} is annotated to return {describe(func.ret_struct_info)} "
                       f"but returns {describe(actual)}", func.ret_struct_info.span)

    def visit_SeqExpr(self, seq: rx.SeqExpr) -> None:
        with self._scope():
            for block in seq.blocks:
                self.visit(block)
            self.visit(seq.body)

    def visit_DataflowBlock(self, block: rx.DataflowBlock) -> None:
        saved, self.dataflow = self.dataflow, set()
        for binding in block.bindings:
            self.visit(binding)
        # The block's DataflowVars end with it; later uses get a precise message.
        self.visible[-1] -= self.dataflow
        self.expired_dataflow |= self.dataflow
        self.dataflow = saved

    def _check_binding_var(self, var: rx.Var) -> None:
        if isinstance(var, rx.DataflowVar) and self.dataflow is None:
            self.error(f"dataflow variable '{var.name_hint}' is defined outside a dataflow block")

    def visit_VarBinding(self, binding: rx.VarBinding) -> None:
        var = binding.var
        self._check_binding_var(var)
        if isinstance(binding.value, rx.Function):
            self.define(var)  # a local function may call itself
            self.visit(binding.value)
        else:
            self.visit(binding.value)
            self.define(var)
        if var.struct_info is not None:
            self.visit(var.struct_info)
        actual = known_struct_info(binding.value)
        if conflict(var.struct_info, actual):
            self.error(f"variable '{var.name_hint}' is annotated {describe(var.struct_info)} "
                       f"but its value is {describe(actual)}", var.struct_info.span)

    def visit_MatchCast(self, binding: rx.MatchCast) -> None:
        self.visit(binding.value)
        self.define_symbols(binding.struct_info)
        self._check_binding_var(binding.var)
        self.define(binding.var)
        self.define_symbols(binding.var.struct_info)

    def visit_If(self, node: rx.If) -> None:
        if self.dataflow is not None:
            self.error("an if expression is not allowed inside a dataflow block")
        self.generic_visit(node)

    # -- uses -----------------------------------------------------------------------

    def visit_TupleGetItem(self, item: rx.TupleGetItem) -> None:
        self.visit(item.tuple_value)
        whole = known_struct_info(item.tuple_value)
        if isinstance(whole, si.TupleStructInfo) and not 0 <= item.index < len(whole.fields):
            self.error(f"index {item.index} out of range for a tuple of {len(whole.fields)} fields", item.span)

    def visit_Var(self, var: rx.Var) -> None:
        if self._is_visible(var):
            return
        if id(var) in self.expired_dataflow:
            self.error(f"dataflow variable '{var.name_hint}' is used outside its dataflow block", once=id(var),
                       notes=self.defined_here(var.name_hint, var))
        else:
            self.error(f"variable '{var.name_hint}' is used but not defined", once=id(var))

    def visit_GlobalVar(self, gvar: rx.GlobalVar) -> None:
        if gvar.name_hint not in self.function_names:
            self.error(f"function '{self.name}' refers to unknown function '{gvar.name_hint}'",
                       once=("global", gvar.name_hint))

    def visit_Call(self, call: rx.Call) -> None:
        self._check_arity(call)
        self.visit(call.op)
        self.visit_value(call.args)
        self.visit_value(call.sinfo_args)
        # Attributes may bind TIR variables of their own (T.index_map's lambda
        # parameters): those are not symbolic variables of the function.
        saved, self.in_attrs = self.in_attrs, True
        self.visit_value(call.attrs)
        self.in_attrs = saved

    def _check_arity(self, call: rx.Call) -> None:
        """A direct call of a Relax function of the module passes one argument per parameter."""
        if not isinstance(call.op, rx.GlobalVar):
            return
        callee = self.functions.get(call.op.name_hint)
        if isinstance(callee, rx.Function) and len(callee.params) != len(call.args):
            self.error(f"function '{call.op.name_hint}' takes {len(callee.params)} "
                       f"argument{'s' if len(callee.params) != 1 else ''} but is called with {len(call.args)}")

    def visit_tir_Var(self, var: tir.Var) -> None:
        if self.in_attrs:
            return
        if not self._is_symbol(var):
            self.error(f"symbolic variable '{var.name}' is not defined by the signature of "
                       f"'{self.name}' or a match_cast", once=id(var))


def check_well_formed(node: IRModule | rx.Function | PrimFunc) -> list[Diagnostic]:
    """Every well-formedness violation in a module (or a single function)."""
    if isinstance(node, IRModule):
        functions = list(node.functions.items())
    else:
        name = node.attrs.get("global_symbol") or "<function>"
        functions = [(name, node)]
    by_name = dict(functions)
    names = set(by_name)
    diagnostics: list[Diagnostic] = []
    for name, func in functions:
        if isinstance(func, PrimFunc):
            diagnostics += check_prim_func(func, name, names)
        elif isinstance(func, rx.PyFunction):
            continue  # Python source text, run by relax.BasePyModule: nothing here to check
        else:
            symbol = func.attrs.get("global_symbol")
            if symbol is not None and symbol != name:
                diagnostics.append(Diagnostic(
                    "error", f"function '{name}' has the global symbol '{symbol}', not its own name", func.span))
            checker = _RelaxChecker(diagnostics, by_name, name)
            checker.visit(func)
    return diagnostics


def assert_well_formed(node: IRModule | rx.Function | PrimFunc) -> None:
    """Raises DiagnosticError with every violation, if there is any (for passes and tests)."""
    diagnostics = check_well_formed(node)
    if diagnostics:
        raise DiagnosticError(diagnostics)
