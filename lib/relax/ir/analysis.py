"""Small questions about IR asked often: free and bound variables, collect, substitute.

A symbolic variable (a TIR Var inside struct info or a buffer shape) is defined at
its first occurrence where a signature may introduce it: the struct info of a
function parameter or a binding's variable, a match_cast's struct info, or the
shape of a buffer in a PrimFunc's buffer_map, or a call's attributes (T.index_map's
lambda parameters). Elsewhere an unseen one is free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import contextmanager

from . import expr as rx
from . import tir_expr as tir
from .node import Node
from .visitor import ExprMutator, ExprVisitor, Visitor, pre_order


class _ScopeCollector(ExprVisitor):
    """Records definitions and uses of Relax and TIR variables in one walk."""

    def __init__(self) -> None:
        super().__init__()
        self.defined: set[int] = set()
        self.bound: list[Node] = []
        self.free: list[Node] = []
        self._free_ids: set[int] = set()
        self._seen_buffers: set[int] = set()
        self._defining_symbols = False

    @contextmanager
    def _symbol_definitions(self):
        saved, self._defining_symbols = self._defining_symbols, True
        try:
            yield
        finally:
            self._defining_symbols = saved

    def _define(self, var: Node) -> None:
        if id(var) not in self.defined:
            self.defined.add(id(var))
            self.bound.append(var)

    def visit_var_def(self, var) -> None:
        self._define(var)
        if isinstance(var, rx.Var) and var.struct_info is not None:
            with self._symbol_definitions():
                self.visit(var.struct_info)

    def visit_MatchCast(self, binding: rx.MatchCast) -> None:
        self.visit(binding.value)
        with self._symbol_definitions():
            self.visit(binding.struct_info)
        self.visit_var_def(binding.var)

    def visit_Call(self, call: rx.Call) -> None:
        self.visit(call.op)
        self.visit_value(call.args)
        self.visit_value(call.sinfo_args)
        # Attributes may bind TIR variables of their own (T.index_map's lambda parameters).
        with self._symbol_definitions():
            self.visit_value(call.attrs)

    def visit_var_use(self, var) -> None:
        if id(var) in self.defined:
            return
        if self._defining_symbols and isinstance(var, tir.Var):
            self._define(var)
        elif id(var) not in self._free_ids:
            self._free_ids.add(id(var))
            self.free.append(var)
            # The unknowns in a free variable's struct info are free with it.
            if isinstance(var, rx.Var) and var.struct_info is not None:
                self.visit(var.struct_info)

    def visit_buffer_def(self, buffer: tir.Buffer) -> None:
        self._seen_buffers.add(id(buffer))
        with self._symbol_definitions():
            Visitor.generic_visit(self, buffer)

    def visit_buffer_use(self, buffer: tir.Buffer) -> None:
        # A buffer used without a declaration (legacy T.allocate style) is taken as
        # declared where it first appears, so only its shape's unknowns count as free.
        if id(buffer) not in self._seen_buffers:
            self.visit_buffer_def(buffer)


def _scopes(node: Node) -> _ScopeCollector:
    collector = _ScopeCollector()
    collector.visit(node)
    return collector


def free_vars(node: Node) -> list[rx.Var]:
    """Relax variables used in `node` but not defined in it, in order of first use."""
    return [v for v in _scopes(node).free if isinstance(v, rx.Var)]


def bound_vars(node: Node) -> list[rx.Var]:
    """Relax variables defined in `node` (parameters, bindings), in order of definition."""
    return [v for v in _scopes(node).bound if isinstance(v, rx.Var)]


def free_symbolic_vars(node: Node) -> list[tir.Var]:
    """TIR variables used in `node` that nothing in it defines, in order of first use."""
    return [v for v in _scopes(node).free if isinstance(v, tir.Var)]


def all_vars(node: Node) -> list[rx.Var]:
    """Every distinct Relax variable in `node`, defined or used, in pre-order."""
    return collect(node, lambda item: isinstance(item, rx.Var))


def all_global_vars(node: Node) -> list[str]:
    """The names of the module functions `node` refers to, each once, in pre-order."""
    names: dict[str, None] = {}
    for item in pre_order(node):
        if isinstance(item, rx.GlobalVar):
            names.setdefault(item.name_hint)
    return list(names)


def collect(node: Node, predicate: Callable[[Node], bool]) -> list[Node]:
    """The distinct nodes under `node` (itself included) for which `predicate` holds, pre-order."""
    seen: set[int] = set()
    found: list[Node] = []
    for item in pre_order(node):
        if id(item) not in seen and predicate(item):
            seen.add(id(item))
            found.append(item)
    return found


class _Substituter(ExprMutator):
    def __init__(self, mapping: Mapping[Node, Node]) -> None:
        super().__init__()
        self._mapping = mapping

    def visit_var_use(self, var):
        replacement = self._mapping.get(var)
        if replacement is not None:
            return replacement
        return super().visit_var_use(var)


def substitute(node: Node, mapping: Mapping[Node, Node]):
    """`node` with uses of variables replaced: Relax Var -> Expr, TIR Var -> PrimExpr.

    Definitions are left in place (their struct info is substituted), and nodes
    that contain no replaced variable are returned unchanged, the same objects.
    """
    if not mapping:
        return node
    return _Substituter(mapping).visit(node)
