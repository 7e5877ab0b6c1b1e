"""AnnotateTIROpPattern: tag every PrimFunc with the fusion pattern of its computation.

FuseOps groups kernels by what their loops do, and it reads that from the attribute
"op_pattern" (TVM's OpPatternKind codes). The kind is derived from the blocks of
the kernel, as TVM's AnalyzeOpPatternKind does:

    T_add[v0, v1] = A[v0, v1] + B[v1]         # broadcast load, elementwise store
becomes
    T.func_attr({"op_pattern": 0, "tirx.noalias": True})

A block is elementwise (0) when its loads use the store's indices, broadcast (1)
when they use a subset of them in order, injective (2) when they use only the
store's variables. A reduction block is comm_reduce (3), or out_elementwise_fusable
(4) when it is a multiply-accumulate (matmul, conv2d) or reads through a window
(pooling); an injective block writing the output after a reduction makes the
whole function out_elementwise_fusable (softmax, mean). Anything else, and a
kernel without blocks, is opaque (8). A function that already has a non-zero
"op_pattern" keeps it.
"""

from __future__ import annotations

import dataclasses

from ..ir import tir
from ..ir.module import IRModule
from ..ir.structural import structural_equal
from ..ir.visitor import Visitor
from ..ir.pass_infra import Pass, register_pass
from ..tir.loop_nests import statements

# TVM's OpPatternKind values, indexed by the registry's pattern names.
ELEMWISE, BROADCAST, INJECTIVE, COMM_REDUCE, OUT_EWISE_FUSABLE, TUPLE, OPAQUE = 0, 1, 2, 3, 4, 7, 8
PATTERN_CODES = {
    "elementwise": ELEMWISE, "broadcast": BROADCAST, "injective": INJECTIVE, "comm_reduce": COMM_REDUCE,
    "out_elementwise_fusable": OUT_EWISE_FUSABLE, "tuple": TUPLE, "opaque": OPAQUE,
}


class _BodyAccesses(Visitor):
    """The stores and loads of one block body, not looking into nested blocks."""

    def __init__(self) -> None:
        self.stores: list[tir.BufferStore] = []
        self.loads: list[tir.BufferLoad] = []

    def visit_BufferStore(self, store: tir.BufferStore) -> None:
        self.stores.append(store)
        self.generic_visit(store)

    def visit_BufferLoad(self, load: tir.BufferLoad) -> None:
        self.loads.append(load)
        self.generic_visit(load)

    def visit_Block(self, block: tir.Block) -> None:
        pass


def _blocks(func: tir.PrimFunc) -> list[tir.Block]:
    """The blocks of a kernel other than the root, in program order (blocks are statements:
    the expressions need no search)."""
    return [stmt for stmt in statements(func.body) if isinstance(stmt, tir.Block) and stmt.name_hint != "root"]


def _same_index(a: tir.PrimExpr, b: tir.PrimExpr) -> bool:
    return a is b or structural_equal(a, b)


def _const_int(expr: tir.PrimExpr, value: int) -> bool:
    return isinstance(expr, tir.IntImm) and expr.value == value


def _is_elementwise(store: tir.BufferStore, load: tir.BufferLoad, unit_vars: set[int]) -> bool:
    # Our legalizations read a size-1 axis at 0 where TVM's use the store's iterator
    # over [0, 1) (the same element), so that spelling counts as the same index.
    if len(store.indices) != len(load.indices):
        return False
    return all(_same_index(s, l) or (_const_int(l, 0) and id(s) in unit_vars)
               for s, l in zip(store.indices, load.indices))


def _is_broadcast(store: tir.BufferStore, load: tir.BufferLoad) -> bool:
    """Every load index is a store index, in order (constant 0 on size-1 axes skipped)."""
    position = 0
    for dim, index in zip(load.buffer.shape, load.indices):
        if _const_int(dim, 1) and _const_int(index, 0):
            continue
        while position < len(store.indices) and not _same_index(store.indices[position], index):
            position += 1
        if position == len(store.indices):
            return False
        position += 1
    return True


class _Vars(Visitor):
    """The variables of an expression, each occurrence."""

    def __init__(self) -> None:
        self.found: list[tir.Var] = []

    def visit_tir_Var(self, var: tir.Var) -> None:
        self.found.append(var)


def _vars_of(expr: tir.PrimExpr) -> list[tir.Var]:
    # One class for every call: the visitor's handler cache is kept per class.
    visitor = _Vars()
    visitor.visit(expr)
    return visitor.found


def _store_vars(store: tir.BufferStore) -> set[int] | None:
    """The ids of the store's index variables, or None if an index is not a plain variable."""
    if not all(isinstance(index, tir.Var) for index in store.indices):
        return None
    return {id(index) for index in store.indices}


def _is_injective(store: tir.BufferStore, load: tir.BufferLoad) -> bool:
    """The load reads through the store's variables only (in any order or arithmetic)."""
    allowed = _store_vars(store)
    if allowed is None:
        return False
    return all(id(var) in allowed for index in load.indices for var in _vars_of(index))


def _allows_reuse(store: tir.BufferStore, load: tir.BufferLoad) -> bool:
    """Some store variable is missing from the load: the loaded value is reused."""
    remaining = _store_vars(store)
    if remaining is None:
        return False
    for index in load.indices:
        for var in _vars_of(index):
            remaining.discard(id(var))
    return bool(remaining)


def _is_multiply_accumulate(body: tir.Stmt) -> bool:
    """C[i, j] = C[i, j] + A[..] * B[..] with both A and B reused across some output axis."""
    if not isinstance(body, tir.BufferStore) or not isinstance(body.value, tir.Add):
        return False
    accumulator, product = body.value.a, body.value.b
    if not (isinstance(accumulator, tir.BufferLoad) and isinstance(product, tir.Mul)):
        return False
    incremental = accumulator.buffer is body.buffer and all(
        _same_index(a, b) for a, b in zip(body.indices, accumulator.indices)) and len(body.indices) == len(
        accumulator.indices)
    lhs, rhs = product.a, product.b
    if not (incremental and isinstance(lhs, tir.BufferLoad) and isinstance(rhs, tir.BufferLoad)):
        return False
    return _allows_reuse(body, lhs) and _allows_reuse(body, rhs)


def _is_pure_reduce(reduce_vars: list[tir.Var], indices) -> bool:
    """Every index that mentions a reduction variable is that variable alone."""
    reduce_ids = {id(v) for v in reduce_vars}
    for index in indices:
        if any(id(var) in reduce_ids for var in _vars_of(index)) and id(index) not in reduce_ids:
            return False
    return True


def _index_pattern(store: tir.BufferStore, loads: list[tir.BufferLoad], unit_vars: set[int]) -> int:
    pattern, has_elementwise = ELEMWISE, False
    for load in loads:
        if _is_elementwise(store, load, unit_vars):
            has_elementwise = True
        elif _is_broadcast(store, load):
            pattern = max(pattern, BROADCAST)
        elif _is_injective(store, load):
            pattern = max(pattern, INJECTIVE)
        else:
            return OPAQUE
    # C[i, j] = A[i, j] + B[j]: one elementwise operand makes the block elementwise.
    if pattern == BROADCAST and has_elementwise:
        return ELEMWISE
    return pattern


def analyze_op_pattern(func: tir.PrimFunc) -> int:
    """The OpPatternKind code of a kernel (see the module docstring)."""
    blocks = _blocks(func)
    if not blocks:
        return OPAQUE
    param_buffers = {id(buffer) for _, buffer in func.buffer_map}
    kind = ELEMWISE
    for block in blocks:
        accesses = _BodyAccesses()
        accesses.visit(block.body)
        stores = accesses.stores
        if not stores or any(s.buffer is not stores[0].buffer or len(s.indices) != len(stores[0].indices)
                             or not all(_same_index(a, b) for a, b in zip(s.indices, stores[0].indices))
                             for s in stores[1:]):
            return OPAQUE
        store = stores[-1]
        unit_vars = {id(iv.var) for iv in block.iter_vars
                     if iv.iter_type == "DataPar" and iv.dom is not None and _const_int(iv.dom.extent, 1)}
        pattern = _index_pattern(store, accesses.loads, unit_vars)
        if pattern != OPAQUE:
            writes_output = any(id(region.buffer) in param_buffers for region in block.writes)
            # A reduction followed by an injective output stage (softmax, mean).
            kind = OUT_EWISE_FUSABLE if writes_output and kind == COMM_REDUCE else max(kind, pattern)
            continue
        reduce_vars = [iv.var for iv in block.iter_vars if iv.iter_type == "CommReduce"]
        if not reduce_vars:
            return OPAQUE
        if _is_multiply_accumulate(block.body) or not all(
                _is_pure_reduce(reduce_vars, load.indices) for load in accesses.loads):
            kind = max(kind, OUT_EWISE_FUSABLE)
        else:
            kind = max(kind, COMM_REDUCE)
    return kind


@register_pass
class AnnotateTIROpPattern(Pass):
    """Set each PrimFunc's "op_pattern" attribute from the shape of its loops."""

    name = "annotate-tir-op-pattern"

    def run(self, mod: IRModule) -> IRModule:
        functions = dict(mod.functions)
        changed = False
        for name, func in mod.functions.items():
            if not isinstance(func, tir.PrimFunc) or func.attrs.get("op_pattern"):
                continue
            attrs = func.attrs.updated(op_pattern=analyze_op_pattern(func))
            functions[name] = dataclasses.replace(func, attrs=attrs)
            changed = True
        if not changed:
            return mod
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
