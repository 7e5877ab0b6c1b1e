"""A small TIR rewriter for the passes of this folder, and variable substitution.

`Rewriter.visit(node)` calls `visit_<ClassName>` when the subclass defines it and
otherwise rebuilds the node from its visited children (fields that are nodes, or
tuples of nodes), returning the very same object when no child changed. Buffers
are leaves here: a pass that changes buffers overrides `visit_Buffer` (and keeps a
memo so one buffer stays one object). Variables are leaves too.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections.abc import Mapping

from ..ir import tir
from ..ir.node import FrozenDict, Node, node_field_names

_LEAVES = (tir.Var, tir.IntImm, tir.FloatImm, tir.StringImm)

# Dispatch tables, filled lazily (the visitors run over every node of every kernel):
# per node class, what generic_visit and _visit_value do with it, and per rewriter
# class, the visit_<ClassName> function for each node class (None: generic_visit).
_LEAF, _TUPLE, _NODE, _OTHER = 0, 1, 2, 3
_KIND: dict[type, int] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}  # per node class, node_fields
_DISPATCH: dict[type, dict[type, object]] = {}
_NO_METHODS: dict[type, object] = {}
_UNSEEN = object()  # a node class a rewriter's table has no entry for yet


def node_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node type a TIR walk reads: node_field_names less the FrozenDicts
    (annotations and attributes, which hold no TIR node)."""
    names = _FIELDS.get(cls)
    if names is None:
        dicts = {f.name for f in dataclasses.fields(cls) if f.type in ("FrozenDict", FrozenDict)}
        names = _FIELDS[cls] = tuple(name for name in node_field_names(cls) if name not in dicts)
    return names


def _kind(cls: type) -> int:
    kind = _KIND.get(cls)
    if kind is None:
        if issubclass(cls, tuple):
            kind = _TUPLE
        elif issubclass(cls, _LEAVES):
            kind = _LEAF
        elif issubclass(cls, Node):
            kind = _NODE
        else:
            kind = _OTHER
        _KIND[cls] = kind
    return kind


def _method(rewriter: type, cls: type):
    name = "visit_" + cls.__name__
    method = getattr(rewriter, name, None)
    if method is None and rewriter.statements_only and issubclass(cls, tir.PrimExpr):
        return _unchanged
    if method is None or inspect.isfunction(method):
        return method
    return lambda self, node: getattr(self, name)(node)  # not a plain function: look it up each time


def _unchanged(_rewriter, node):
    return node


class Rewriter:
    """Override `visit_<NodeType>(self, node)` for the node types a pass cares about.

    A subclass customizes visit_ methods and generic_visit, never visit itself: generic_visit
    dispatches children without it.

    A pass that rewrites statements only sets `statements_only`: expressions it defines no
    visit_ method for are then kept as they are, without a walk through their nodes
    (most of a kernel's nodes are in its expressions)."""

    statements_only = False
    # Whether generic_visit leaves out the leaves this rewriter has no visit_ method for:
    # not when a subclass overrides generic_visit, which then sees them (simplify.py's does).
    skips_plain_leaves = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.skips_plain_leaves = cls.generic_visit is Rewriter.generic_visit

    def visit(self, node):
        if node is None:
            return None
        table = _DISPATCH.get(self.__class__)
        if table is None:
            table = _DISPATCH[self.__class__] = {}
        cls = node.__class__
        try:
            method = table[cls]
        except KeyError:
            method = table[cls] = _method(self.__class__, cls)
        if method is not None:
            return method(self, node)
        return self.generic_visit(node)

    def visit_Buffer(self, buffer: tir.Buffer) -> tir.Buffer:
        return buffer

    def generic_visit(self, node):
        cls = node.__class__
        kind = _KIND.get(cls)
        if kind is None:
            kind = _kind(cls)
        if kind != _NODE:
            return node
        changes = None
        kinds = _KIND
        methods = _DISPATCH.get(self.__class__, _NO_METHODS)  # this rewriter's visit_ methods so far
        # The same table, read to leave out leaves without a visit_ method (skips_plain_leaves).
        table = methods if self.skips_plain_leaves else _NO_METHODS
        names = _FIELDS.get(cls)  # node_fields' answer, read here without a call per node
        if names is None:
            names = node_fields(cls)
        for name in names:
            value = getattr(node, name)
            value_cls = value.__class__
            value_kind = kinds.get(value_cls)
            if value_kind == _OTHER:  # strings, numbers, None: nothing to visit
                continue
            if value_kind == _LEAF and table.get(value_cls, _UNSEEN) is None:
                continue  # a leaf this rewriter has no visit_ method for stays as it is
            # A node is dispatched here as visit would, without its frame (one Python frame less
            # per level of the tree: CPython keeps frames in 16 KiB chunks, codegen/fresh_stack.py).
            if value_kind == _NODE:
                method = methods.get(value_cls, _UNSEEN)
                new = (self.generic_visit(value) if method is None else self.visit(value) if method is _UNSEEN
                       else method(self, value))
            else:
                new = self._visit_value(value)
            if new is not value:
                if changes is None:
                    changes = {}
                changes[name] = new
        return node.with_fields(**changes) if changes else node

    def _visit_value(self, value):
        cls = value.__class__
        kind = _KIND.get(cls)
        if kind is None:
            kind = _kind(cls)
        if kind == _NODE or kind == _LEAF:
            return self.visit(value)
        if kind == _TUPLE:
            changed = False
            items = []
            kinds = _KIND
            table = _DISPATCH.get(self.__class__, _NO_METHODS) if self.skips_plain_leaves else _NO_METHODS
            for item in value:
                item_cls = item.__class__
                item_kind = kinds.get(item_cls)
                if item_kind == _LEAF and table.get(item_cls, _UNSEEN) is None:
                    new = item  # as in generic_visit: a leaf without a visit_ method
                elif item_kind == _NODE:
                    new = self.visit(item)
                else:
                    new = self._visit_value(item)
                changed = changed or new is not item
                items.append(new)
            return tuple(items) if changed else value
        return value


class Substituter(Rewriter):
    """Replaces variables (by identity) with expressions, in buffers' shapes too."""

    def __init__(self, mapping: Mapping[tir.Var, tir.PrimExpr]):
        self.mapping = dict(mapping)
        self._buffers: dict[int, tir.Buffer] = {}

    def visit_Var(self, var):
        return self.mapping.get(var, var)

    visit_SizeVar = visit_Var

    def visit_Buffer(self, buffer):
        key = id(buffer)
        if key not in self._buffers:
            self._buffers[key] = self.generic_visit(buffer)
        return self._buffers[key]


def substitute(node, mapping: Mapping[tir.Var, tir.PrimExpr]):
    """`node` (or a tuple of nodes) with every variable of `mapping` replaced by its expression."""
    if not mapping:
        return node
    return Substituter(mapping)._visit_value(node)  # a node, or a tuple of them


# Per class: 0 a tuple, 1 a Buffer, 2 another node, 3 anything else (walk's dispatch, filled lazily).
_WALK_KIND: dict[type, int] = {tuple: 0}


def _walk_kind(cls: type) -> int:
    kind = _WALK_KIND.get(cls)
    if kind is None:
        kind = 0 if issubclass(cls, tuple) and not issubclass(cls, FrozenDict) else \
            1 if issubclass(cls, tir.Buffer) else 2 if issubclass(cls, Node) else 3
        _WALK_KIND[cls] = kind
    return kind


def walk(node, visit, node_type=None) -> None:
    """Calls `visit(n)` on `node` and every node below it, buffers included, pre-order; with
    `node_type`, on the nodes of that type only (checked here: no call for the others)."""
    stack = [node]
    seen_buffers: set[int] = set()
    pop, push = stack.pop, stack.append
    kinds = _WALK_KIND
    while stack:
        current = pop()
        cls = current.__class__
        kind = kinds.get(cls)
        if kind is None:
            kind = _walk_kind(cls)
        if kind == 0:
            stack.extend(reversed(current))
            continue
        if kind == 3:
            continue
        if kind == 1:
            if id(current) in seen_buffers:
                continue
            seen_buffers.add(id(current))
        if node_type is None or isinstance(current, node_type):
            visit(current)
        names = _FIELDS.get(cls)
        if names is None:
            names = node_fields(cls)
        for name in reversed(names):
            value = getattr(current, name)
            value_kind = kinds.get(value.__class__)
            if value_kind is None:
                value_kind = _walk_kind(value.__class__)
            if value_kind != 3:
                push(value)


MISSING = object()  # NodeMemo.get's answer when it keeps none


class NodeMemo:
    """Answers to a question about nodes, kept by the node's identity (and `about`, what else
    the question names). Nodes never change; each entry holds its node, so that the id is not
    reused while the entry lives. Bounded: when full, the oldest entry goes, so a long-lived
    process keeps only the last few kernels' nodes."""

    def __init__(self, size: int):
        self.size = size
        self._entries: dict[tuple, tuple] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, node, about=None):
        entry = self._entries.get((id(node), about))
        return entry[1] if entry is not None and entry[0] is node else MISSING

    def put(self, node, answer, about=None) -> None:
        with self._lock:
            if len(self._entries) >= self.size:
                self._entries.pop(next(iter(self._entries)), None)
            self._entries[(id(node), about)] = (node, answer)


# collect's latest answers: the schedule rules ask the same questions of one kernel again
# and again (about two thirds of the transformer's calls are repeats).
_COLLECTED_MAX = 64
_COLLECTED = NodeMemo(_COLLECTED_MAX)


def collect(node, node_type) -> list:
    """Every node of `node_type` below `node`, in pre-order."""
    kept = _COLLECTED.get(node, node_type)
    if kept is not MISSING:
        return list(kept)
    if _statements_only(node_type):  # the same nodes, the expressions not searched
        found = [item for item in statements(node) if isinstance(item, node_type)]
    else:
        found = []
        walk(node, found.append, node_type)
    _COLLECTED.put(node, tuple(found), node_type)
    return found


# Per query (a class or a tuple of them): whether it names statements only (collect's dispatch).
_STATEMENTS_ONLY: dict = {}


def _statements_only(node_type) -> bool:
    """Whether `node_type` (a class or a tuple of them) names statements only."""
    answer = _STATEMENTS_ONLY.get(node_type)
    if answer is None:
        classes = node_type if isinstance(node_type, tuple) else (node_type,)
        answer = _STATEMENTS_ONLY[node_type] = all(issubclass(cls, tir.Stmt) for cls in classes)
    return answer


def statements(stmt):
    """Every statement under `stmt`, itself included, in pre-order. Expressions hold none, so
    they are not searched: after the schedules, most of a kernel's nodes are expressions."""
    stack = [stmt]
    pop, push = stack.pop, stack.append
    while stack:
        current = pop()
        if isinstance(current, tuple):
            stack.extend(item for item in reversed(current) if isinstance(item, tir.Stmt))
            continue
        yield current
        for name in reversed(node_fields(type(current))):
            value = getattr(current, name)
            if isinstance(value, (tir.Stmt, tuple)):
                push(value)
