"""The Relax side of FuseOps: one primitive function from a group of bindings.

Values the group reads from outside become parameters (constants and shapes
included, named param_0, param_1, ...), a tuple parameter used only through its
fields becomes one parameter per field used, the group's outputs are its results
(a tuple when there are several), and symbolic sizes that no parameter defines
arrive in a last "tir_vars" shape parameter. fuse_ops.py decides the groups and
calls the functions made here.
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as rx
from ..ir import tir
from ..ir.analysis import collect, free_symbolic_vars, free_vars, substitute
from ..ir.node import FrozenDict
from ..ir.struct_info import ShapeStructInfo, TupleStructInfo
from ..ir.visitor import ExprMutator
from ..op.legalize_context import symbolic_vars
from ..records import record

CALL_TIR = "relax.call_tir"


def leaves(expr: rx.Expr):
    """The leaf operands of a call argument: the fields of a tuple, recursively."""
    if isinstance(expr, rx.Tuple):
        for item in expr.fields:
            yield from leaves(item)
    elif isinstance(expr, (rx.Var, rx.Constant, rx.ShapeExpr, rx.PrimValue, rx.StringImm, rx.DataTypeImm)):
        yield expr


@record(mutable=True)
class GroupFunction:
    """The bindings of one group, and what the new function needs from outside."""

    bindings: list[rx.Binding]
    arguments: list[rx.Expr] = dataclasses.field(default_factory=list)
    outputs: list[rx.Var] = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        parts = ["fused"]
        for binding in self.bindings:
            value = binding.value
            if isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name == CALL_TIR:
                parts.append(value.args[0].name_hint)
            elif isinstance(value, rx.Call) and isinstance(value.op, rx.Op):
                parts.append(value.op.name)
        return "_".join(parts)


def _operands(value: rx.Expr) -> list[rx.Expr]:
    if isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name == CALL_TIR:
        return list(leaves(value.args[1]))
    if isinstance(value, rx.Call):
        return [leaf for arg in value.args for leaf in leaves(arg)]
    if isinstance(value, rx.TupleGetItem):
        return [value.tuple_value]
    return list(free_vars(value))


def make_function(group: GroupFunction) -> tuple[rx.Function, list[rx.Expr]]:
    """The primitive function of a group and the arguments to call it with."""
    defined: set[int] = set()
    params: list[rx.Var] = []
    arguments: list[rx.Expr] = []
    constants = 0
    for binding in group.bindings:
        for operand in _operands(binding.value):
            if isinstance(operand, rx.PrimValue) or any(operand is a for a in arguments):
                continue
            if isinstance(operand, rx.Var) and id(operand) in defined:
                continue
            if isinstance(operand, rx.Var):
                name = operand.name_hint
            else:
                name, constants = f"param_{constants}", constants + 1
            params.append(rx.Var(name, operand.struct_info))
            arguments.append(operand)
        defined.add(id(binding.var))
    params, arguments, item_params = _split_tuple_params(group, params, arguments)
    mapping: dict = {old: new for old, new in zip(arguments, params) if isinstance(old, rx.Var)}
    constant_params = {id(old): new for old, new in zip(arguments, params) if not isinstance(old, rx.Var)}
    outputs = {id(v): i for i, v in enumerate(group.outputs)}
    results: list[rx.Var | None] = [None] * len(group.outputs)
    bindings: list[rx.Binding] = []
    count = 0
    for binding in group.bindings:
        item = item_params.get(id(binding.value)) if isinstance(binding.value, rx.TupleGetItem) else None
        if item is not None:
            mapping[binding.var] = item
            if id(binding.var) in outputs:
                results[outputs[id(binding.var)]] = item
            continue
        value = _replace_constants(substitute(binding.value, mapping), constant_params)
        if id(binding.var) in outputs:
            var = rx.Var("gv" if count == 0 else f"gv{count}", binding.var.struct_info)
            count += 1
            results[outputs[id(binding.var)]] = var
        else:
            var = rx.DataflowVar(binding.var.name_hint, binding.var.struct_info)
        mapping[binding.var] = var
        bindings.append(rx.VarBinding(var, value))
    body_value = results[0] if len(results) == 1 else rx.Tuple(tuple(results))
    ret = results[0].struct_info if len(results) == 1 else TupleStructInfo(tuple(r.struct_info for r in results))
    body = rx.SeqExpr((rx.DataflowBlock(tuple(bindings)),), body_value)
    attrs = FrozenDict({"Primitive": True})
    func = rx.Function(tuple(params), body, ret, True, attrs)
    symbols = free_symbolic_vars(func) + _undefinable_symbols(params)
    if symbols:
        params.append(rx.Var("tir_vars", ShapeStructInfo(tuple(symbols))))
        arguments.append(rx.ShapeExpr(tuple(symbols)))
        func = dataclasses.replace(func, params=tuple(params))
    renewed = {var: tir.Var(var.name, var.dtype) for var in _symbols_of(func)}
    return substitute(func, renewed), arguments


def _undefinable_symbols(params: list[rx.Var]) -> list[tir.Var]:
    """Sizes the parameters mention only inside expressions (n, when every parameter
    is (n * 2,)): a kernel cannot bind them from a shape, so they arrive as tir_vars."""
    dims = []
    for param in params:
        for info in _struct_info_leaves(param.struct_info):
            values = info.values if isinstance(info, ShapeStructInfo) else getattr(info, "shape_values", None)
            dims += list(values or ())
    bare = {id(d) for d in dims if isinstance(d, tir.Var)}
    return [v for v in symbolic_vars(dims) if id(v) not in bare]


def _struct_info_leaves(info):
    if isinstance(info, TupleStructInfo):
        for field in info.fields:
            yield from _struct_info_leaves(field)
    elif info is not None:
        yield info


def _symbols_of(func: rx.Function) -> list[tir.Var]:
    """The symbolic sizes of a new function, renewed so that no two functions share one."""
    return collect(func, lambda node: isinstance(node, tir.Var))


def _replace_constants(value: rx.Expr, constant_params: dict[int, rx.Var]) -> rx.Expr:
    if not constant_params:
        return value

    class _Constants(ExprMutator):
        def visit_Constant(self, const):
            return constant_params.get(id(const), const)

        def visit_ShapeExpr(self, shape):
            return constant_params.get(id(shape), shape)

        def visit_StringImm(self, imm):
            return constant_params.get(id(imm), imm)

        def visit_DataTypeImm(self, imm):
            return constant_params.get(id(imm), imm)

    return _Constants().visit(value)


def _split_tuple_params(group: GroupFunction, params, arguments):
    """A tuple parameter used only through TupleGetItem becomes one parameter per used field."""
    item_params: dict[int, rx.Var] = {}
    new_params, new_arguments = [], []
    for param, argument in zip(params, arguments):
        info = getattr(argument, "struct_info", None)
        uses = [b.value for b in group.bindings if isinstance(b.value, rx.TupleGetItem)
                and b.value.tuple_value is argument]
        whole = any(argument is operand for b in group.bindings if not isinstance(b.value, rx.TupleGetItem)
                    for operand in _operands(b.value))
        if not isinstance(info, TupleStructInfo) or whole or not uses:
            new_params.append(param)
            new_arguments.append(argument)
            continue
        by_index: dict[int, rx.Var] = {}
        for use in uses:
            if use.index not in by_index:
                by_index[use.index] = rx.Var(f"{param.name_hint}_{use.index}", info.fields[use.index])
                new_params.append(by_index[use.index])
                new_arguments.append(rx.TupleGetItem(argument, use.index))
            item_params[id(use)] = by_index[use.index]
    return new_params, new_arguments, item_params
