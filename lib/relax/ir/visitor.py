"""Visitor and Mutator: walks over any IR node, derived from the dataclass fields.

A node's children are whatever its fields hold: nodes, tuples of nodes (nested, as
PrimFunc.buffer_map's pairs are), and FrozenDicts whose values are nodes. Nothing
here lists a node's children by hand, so a new node type is walked for free.

Dispatch goes to `visit_<ClassName>`, falling back along the class's bases
(`visit_BinaryOp` catches `tir.Add`), then to `generic_visit`. A TIR class whose
name a Relax class also has answers to `visit_tir_<Name>` only (`visit_tir_Var`,
`visit_tir_Call`), so a Relax pass overriding `visit_Var` never sees a TIR var.

`ExprVisitor` and `ExprMutator` add what most passes need: hooks that tell a
variable's definition (function parameter, binding, match_cast, loop variable,
let, block iterator, allocate, buffer declaration) from its uses. One walk serves
Relax and TIR, so `StmtExprVisitor` and `StmtExprMutator` are the same classes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

from . import expr as rx
from . import tir_expr as tir
from .node import FrozenDict, Node, field_names, node_field_names
from .registry import definition_fields, scoped_field_order, visitor_method_names


# Walks recurse once per level of nesting, and generated TIR nests deeply (a sum of
# a few thousand terms is a chain of Adds). Python 3.11 keeps Python-to-Python calls
# off the C stack, so a higher limit is safe; it is raised once, never lowered.
_RECURSION_LIMIT = 30000
if sys.getrecursionlimit() < _RECURSION_LIMIT:
    sys.setrecursionlimit(_RECURSION_LIMIT)


# The walks' dispatch on the class of a field value: 0 a node, 1 a tuple, 2 a FrozenDict,
# 3 anything else (filled lazily; FrozenDict is an ABC, whose isinstance test is slow).
_VALUE_KIND: dict[type, int] = {}


def _value_kind(cls: type) -> int:
    kind = _VALUE_KIND.get(cls)
    if kind is None:
        kind = 0 if issubclass(cls, Node) else 1 if issubclass(cls, tuple) else 2 if issubclass(cls, FrozenDict) else 3
        _VALUE_KIND[cls] = kind
    return kind


def iter_nodes(value: Any) -> Iterator[Node]:
    """The nodes directly held by a field value (a node, tuple or FrozenDict)."""
    kind = _VALUE_KIND.get(value.__class__)
    if kind is None:
        kind = _value_kind(value.__class__)
    if kind == 0:
        yield value
    elif kind == 1:
        for item in value:
            yield from iter_nodes(item)
    elif kind == 2:
        for item in value.values():
            yield from iter_nodes(item)


def children(node: Node) -> list[Node]:
    """The direct child nodes of `node`, in field order."""
    return [child for name in node_field_names(type(node)) for child in iter_nodes(getattr(node, name))]


_HANDLER_NAMES: dict[tuple[type, type], str] = {}


def _handler(visitor: Any, node_type: type) -> Callable[[Node], Any]:
    """The bound `visit_*` method of `visitor` for nodes of `node_type`."""
    key = (type(visitor), node_type)
    name = _HANDLER_NAMES.get(key)
    if name is None:
        name = next((n for n in visitor_method_names(node_type) if hasattr(type(visitor), n)), "generic_visit")
        _HANDLER_NAMES[key] = name
    return getattr(visitor, name)


class Visitor:
    """Visits every occurrence of every node; override `visit_<ClassName>` methods.

    An override that still wants the children visited calls `self.generic_visit(node)`.
    """

    def visit(self, node: Node) -> Any:
        return _handler(self, type(node))(node)

    def visit_value(self, value: Any) -> None:
        """Visits the nodes inside a field value (a node, tuple, FrozenDict or leaf)."""
        kind = _VALUE_KIND.get(value.__class__)
        if kind is None:
            kind = _value_kind(value.__class__)
        if kind == 0:
            self.visit(value)
        elif kind != 3:
            for item in iter_nodes(value):
                self.visit(item)

    def generic_visit(self, node: Node) -> None:
        for name in node_field_names(type(node)):
            self.visit_value(getattr(node, name))


class Mutator:
    """Rebuilds a tree bottom-up, copying only what changed.

    `visit` returns the very object it was given when nothing under it changed.
    Results are memoized by node identity for one mutator instance, so a node shared
    in many places (a variable and its uses, a buffer and its loads) is rewritten
    once and stays shared. A mutator whose rewrite depends on where a node sits sets
    `memoize = False`.
    """

    memoize = True

    @property
    def _memo(self) -> dict[int, tuple[Node, Any]]:
        # Created on first use, so that subclasses need not call __init__.
        memo = self.__dict__.get("_memo_table")
        if memo is None:
            memo = self.__dict__["_memo_table"] = {}
        return memo

    def visit(self, node: Node) -> Any:
        if not self.memoize:
            return _handler(self, type(node))(node)
        memo = self._memo
        hit = memo.get(id(node))
        if hit is not None:
            return hit[1]
        result = _handler(self, type(node))(node)
        # Keep `node` alive with its result so that its id is never reused.
        memo[id(node)] = (node, result)
        return result

    def remember(self, old: Node, new: Any) -> None:
        """Makes later visits of `old` return `new` (used for variable definitions)."""
        if self.memoize:
            self._memo[id(old)] = (old, new)

    def mutate_value(self, value: Any) -> Any:
        """A field value with its nodes mutated; the same object if none changed."""
        kind = _VALUE_KIND.get(value.__class__)
        if kind is None:
            kind = _value_kind(value.__class__)
        if kind == 0:
            return self.visit(value)
        if kind == 1:
            items = [self.mutate_value(item) for item in value]
            if all(new is old for new, old in zip(items, value)):
                return value
            return tuple(items)
        if kind == 2:
            items = {key: self.mutate_value(item) for key, item in value.items()}
            if all(items[key] is item for key, item in value.items()):
                return value
            return FrozenDict(items)
        return value

    def generic_visit(self, node: Node) -> Node:
        changes = {}
        for name in scoped_field_order(type(node)):
            old = getattr(node, name)
            new = self.mutate_field(node, name, old)
            if new is not old:
                changes[name] = new
        return node.with_fields(**changes) if changes else node

    def mutate_field(self, node: Node, name: str, value: Any) -> Any:
        return self.mutate_value(value)


def _is_variable(item: Node) -> bool:
    return isinstance(item, (rx.Var, tir.Var))


class ExprVisitor(Visitor):
    """A walk that tells definitions from uses, for Relax and TIR alike.

    Hooks: `visit_var_def(var)` at a definition (its struct info is visited there),
    `visit_var_use(var)` at each use, `visit_buffer_def` / `visit_buffer_use` for
    TIR buffers. A binding's value is visited before its variable is defined.
    """

    def generic_visit(self, node: Node) -> None:
        defined = definition_fields(type(node))
        for name in scoped_field_order(type(node)):
            value = getattr(node, name)
            if name in defined:
                self.visit_definitions(value)
            else:
                self.visit_value(value)

    def visit_definitions(self, value: Any) -> None:
        for item in iter_nodes(value):
            if _is_variable(item):
                self.visit_var_def(item)
            elif isinstance(item, tir.Buffer):
                self.visit_buffer_def(item)
            else:
                self.visit(item)

    def visit_VarBinding(self, binding: rx.VarBinding) -> None:
        self.visit(binding.value)
        self.visit_var_def(binding.var)

    def visit_MatchCast(self, binding: rx.MatchCast) -> None:
        self.visit(binding.value)
        self.visit(binding.struct_info)
        self.visit_var_def(binding.var)

    def visit_Var(self, var: rx.Var) -> None:
        self.visit_var_use(var)

    def visit_tir_Var(self, var: tir.Var) -> None:
        self.visit_var_use(var)

    def visit_Buffer(self, buffer: tir.Buffer) -> None:
        self.visit_buffer_use(buffer)

    def visit_var_def(self, var: rx.Var | tir.Var) -> None:
        if isinstance(var, rx.Var) and var.struct_info is not None:
            self.visit(var.struct_info)

    def visit_var_use(self, var: rx.Var | tir.Var) -> None:
        pass

    def visit_buffer_def(self, buffer: tir.Buffer) -> None:
        Visitor.generic_visit(self, buffer)

    def visit_buffer_use(self, buffer: tir.Buffer) -> None:
        pass


class ExprMutator(Mutator):
    """A Mutator with definition and use hooks, for Relax and TIR alike.

    `visit_var_def(var)` returns the variable that replaces `var` at its definition;
    every later use of `var` then becomes that variable (unless `visit_var_use`
    says otherwise). The default rebuilds a Relax variable whose struct info changed.
    """

    def mutate_field(self, node: Node, name: str, value: Any) -> Any:
        if name in definition_fields(type(node)):
            return self.mutate_definitions(value)
        return self.mutate_value(value)

    def mutate_definitions(self, value: Any) -> Any:
        if self.memoize and isinstance(value, Node):
            # A variable defined twice (a PrimFunc parameter that buffer_map binds
            # again) must be rewritten once, or its uses would split in two.
            hit = self._memo.get(id(value))
            if hit is not None:
                return hit[1]
        if _is_variable(value):
            new = self.visit_var_def(value)
            self.remember(value, new)
            return new
        if isinstance(value, tir.Buffer):
            new = self.visit_buffer_def(value)
            self.remember(value, new)
            return new
        if isinstance(value, tuple):
            items = [self.mutate_definitions(item) for item in value]
            return value if all(n is o for n, o in zip(items, value)) else tuple(items)
        return self.mutate_value(value)

    def visit_VarBinding(self, binding: rx.VarBinding) -> rx.VarBinding:
        value = self.visit(binding.value)
        var = self.mutate_definitions(binding.var)
        if value is binding.value and var is binding.var:
            return binding
        return binding.with_fields(var=var, value=value)

    def visit_MatchCast(self, binding: rx.MatchCast) -> rx.MatchCast:
        value = self.visit(binding.value)
        info = self.visit(binding.struct_info)
        var = self.mutate_definitions(binding.var)
        if value is binding.value and info is binding.struct_info and var is binding.var:
            return binding
        return binding.with_fields(var=var, value=value, struct_info=info)

    def visit_Var(self, var: rx.Var) -> rx.Expr:
        return self.visit_var_use(var)

    def visit_tir_Var(self, var: tir.Var) -> tir.PrimExpr:
        return self.visit_var_use(var)

    def visit_Buffer(self, buffer: tir.Buffer) -> tir.Buffer:
        return self.visit_buffer_use(buffer)

    def visit_var_def(self, var):
        return Mutator.generic_visit(self, var)

    def visit_var_use(self, var):
        return Mutator.generic_visit(self, var)

    def visit_buffer_def(self, buffer: tir.Buffer) -> tir.Buffer:
        return Mutator.generic_visit(self, buffer)

    def visit_buffer_use(self, buffer: tir.Buffer) -> tir.Buffer:
        return Mutator.generic_visit(self, buffer)


# TIR passes read better with TVM's names for the same walks.
StmtExprVisitor = ExprVisitor
StmtExprMutator = ExprMutator


class _Walker(Visitor):
    """walk's visitor: one class for every walk, so that its handlers are looked up once
    per node type (_handler's table), not once per walk."""

    def __init__(self, pre: Callable[[Node], Any] | None, post: Callable[[Node], Any] | None) -> None:
        self.pre, self.post = pre, post

    def generic_visit(self, node: Node) -> None:
        if self.pre is not None:
            self.pre(node)
        Visitor.generic_visit(self, node)
        if self.post is not None:
            self.post(node)


def walk(root: Node, pre: Callable[[Node], Any] | None = None,
         post: Callable[[Node], Any] | None = None) -> None:
    """Calls `pre(node)` before and `post(node)` after the children of every node."""
    _Walker(pre, post).visit(root)


def _push_nodes(stack: list, value: Any) -> None:
    """Pushes the nodes of a field value (iter_nodes' order) so that they pop in that order."""
    kind = _value_kind(value.__class__)
    if kind == 0:
        stack.append(value)
    elif kind != 3:
        for item in reversed(value if kind == 1 else tuple(value.values())):
            _push_nodes(stack, item)


def pre_order(root: Node) -> list[Node]:
    """Every occurrence of every node, parents before children."""
    # walk(root, pre=found.append)'s order, over an explicit stack: the analyses ask for it
    # about a hundred times per model, and a frame per node was most of their time.
    found: list[Node] = []
    stack = [root]
    pop, push = stack.pop, stack.append
    kinds = _VALUE_KIND
    while stack:
        node = pop()
        found.append(node)
        for name in reversed(node_field_names(node.__class__)):
            value = getattr(node, name)
            kind = kinds.get(value.__class__)
            if kind == 0:
                push(value)
            elif kind == 1:
                for item in reversed(value):
                    if kinds.get(item.__class__) == 0:
                        push(item)
                    else:  # a nested tuple or FrozenDict, a leaf, or a class not seen yet
                        _push_nodes(stack, item)
            elif kind != 3:  # a FrozenDict, or a class not seen yet
                _push_nodes(stack, value)
    return found


def post_order(root: Node) -> list[Node]:
    """Every occurrence of every node, children before parents."""
    found: list[Node] = []
    walk(root, post=found.append)
    return found
