"""FuseOps: group the kernels of each dataflow block into primitive functions.

The bindings of every dataflow block form a graph (fusion_graph.py) whose nodes
carry the "op_pattern" of the kernel they call (set by annotate-tir-op-pattern).
Each group of two or more bindings moves into a new private Relax function with
the attribute "Primitive", named after its kernels, and the block calls it:

    lv1 = R.call_tir(cls.matmul, (x, w), out_sinfo=R.Tensor((1, 128)))
    lv2 = R.call_tir(cls.add, (b, lv1), out_sinfo=R.Tensor((1, 128)))
    lv3 = R.call_tir(cls.relu, (lv2,), out_sinfo=R.Tensor((1, 128)))
becomes
    lv3: R.Tensor((1, 128)) = cls.fused_matmul_add_relu(x, w, b)
with
    @R.function(private=True)
    def fused_matmul_add_relu(x, w, b):
        R.func_attr({"Primitive": True})
        with R.dataflow():
            lv1 = R.call_tir(cls.matmul, (x, w), ...)
            lv2 = R.call_tir(cls.add, (b, lv1), ...)
            gv = R.call_tir(cls.relu, (lv2,), ...)
            R.output(gv)
        return gv

Only dataflow blocks are fused; ordinary blocks may have side effects. Values
from outside a group become its parameters (constants included), symbolic sizes
that its parameters do not define arrive as a "tir_vars" shape, and a group with
several results returns a tuple. FuseTIR then turns each primitive function into
one kernel. `--pass-config relax.FuseOps.max_depth=N` bounds the group size.
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as rx
from ..ir import tir
from ..ir.analysis import collect, free_symbolic_vars, free_vars, substitute
from ..ir.module import IRModule
from ..ir.node import FrozenDict
from ..ir.struct_info import ShapeStructInfo, TupleStructInfo
from ..ir.structural import structural_equal
from ..ir.visitor import ExprMutator, ExprVisitor
from .annotate_tir_op_pattern import INJECTIVE, OPAQUE
from .fusion_graph import MAX_FUSE_DEPTH, DataflowGraph, Group, GraphPartitioner
from ..ir.pass_infra import Pass, PassContext, get_pass, register_pass

CALL_TIR = "relax.call_tir"


def _is_fusable_function(func) -> bool:
    return isinstance(func, rx.Function) and not func.attrs.get("Primitive") and "Codegen" not in func.attrs


def _leaves(expr: rx.Expr):
    """The leaf operands of a call argument: the fields of a tuple, recursively."""
    if isinstance(expr, rx.Tuple):
        for item in expr.fields:
            yield from _leaves(item)
    elif isinstance(expr, (rx.Var, rx.Constant, rx.ShapeExpr, rx.PrimValue, rx.StringImm, rx.DataTypeImm)):
        yield expr


class _GraphBuilder(ExprVisitor):
    """The dataflow graph of every fusable function of a module."""

    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.mod = mod
        self.graph = DataflowGraph()

    def visit_Function(self, func: rx.Function) -> None:
        for param in func.params:
            self.graph.add(param, OPAQUE, extern_ref=True)
        self.visit(func.body)

    def visit_BindingBlock(self, block: rx.BindingBlock) -> None:
        # Ordinary blocks may have side effects; only nested dataflow blocks (in if
        # branches) are looked at.
        for binding in block.bindings:
            if isinstance(binding, rx.VarBinding) and not isinstance(binding.value, rx.Call):
                self.visit(binding.value)

    def visit_DataflowBlock(self, block: rx.DataflowBlock) -> None:
        for binding in block.bindings:
            self._binding(binding)

    def _binding(self, binding: rx.Binding) -> None:
        value = binding.value
        if isinstance(binding, rx.MatchCast):
            pattern, operands, edge = OPAQUE, list(_leaves_in(value)), OPAQUE
        elif isinstance(value, rx.Call):
            pattern, operands = self._call_pattern(value)
            edge = pattern
        elif isinstance(value, rx.TupleGetItem):
            pattern, operands, edge = INJECTIVE, list(_leaves(value.tuple_value)), INJECTIVE
        else:
            pattern, operands, edge = OPAQUE, list(_leaves_in(value)), OPAQUE
        extern = not isinstance(binding.var, rx.DataflowVar)
        # The node gets its index after its operands, as in a post-order walk.
        producers = [self._operand(operand) for operand in operands]
        node = self.graph.add(binding.var, pattern, extern_ref=extern)
        for producer in producers:
            DataflowGraph.add_edge(producer, node, edge)

    def _call_pattern(self, call: rx.Call):
        if isinstance(call.op, rx.Op) and call.op.name == CALL_TIR and isinstance(call.args[0], rx.GlobalVar):
            kernel = self.mod.functions.get(call.args[0].name_hint)
            pattern = kernel.attrs.get("op_pattern", OPAQUE) if isinstance(kernel, tir.PrimFunc) else OPAQUE
            return int(pattern), list(_leaves(call.args[1]))
        return OPAQUE, [leaf for arg in call.args for leaf in _leaves(arg)]

    def _operand(self, expr: rx.Expr):
        node = self.graph.get(expr)
        if node is None:
            # A constant, or a variable from an ordinary block: never fused.
            node = self.graph.add(expr, OPAQUE, extern_ref=isinstance(expr, rx.Var))
        return node


def _leaves_in(expr: rx.Expr) -> list[rx.Var]:
    return free_vars(expr)


@dataclasses.dataclass
class _GroupFunction:
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
        return list(_leaves(value.args[1]))
    if isinstance(value, rx.Call):
        return [leaf for arg in value.args for leaf in _leaves(arg)]
    if isinstance(value, rx.TupleGetItem):
        return [value.tuple_value]
    return list(free_vars(value))


class _Fusor(ExprMutator):
    """Rewrites the dataflow blocks of one function, adding group functions to `new_functions`."""

    def __init__(self, group_of: dict[int, Group], module_names: set[str], created: list[tuple[str, rx.Function]],
                 names: dict[str, int]):
        super().__init__()
        self.group_of = group_of
        self.module_names = module_names
        self.created = created
        self.names = names
        self.tuples: dict[int, rx.Tuple] = {}  # tuples built in the block, by their variable

    def fresh(self, like: rx.Var, info) -> rx.Var:
        """A new variable named as TVM's block builder names them: lv, lv1, ... (gv for outputs)."""
        dataflow = isinstance(like, rx.DataflowVar)
        base = "lv" if dataflow else "gv"
        count = self.names.get(base, 0)
        self.names[base] = count + 1
        name = base if count == 0 else f"{base}{count}"
        return rx.DataflowVar(name, info) if dataflow else rx.Var(name, info)

    def visit_Function(self, func: rx.Function) -> rx.Function:
        return self.generic_visit(func)

    def visit_DataflowBlock(self, block: rx.DataflowBlock) -> rx.DataflowBlock:
        groups = self._groups(block)
        if not groups:
            # Variables of earlier groups may still need their new names here.
            return self.generic_visit(block)
        units = self._units(block, groups)
        bindings: list[rx.Binding] = []
        for unit in units:
            if isinstance(unit, _GroupFunction):
                bindings.extend(self._call_group(unit))
                continue
            binding = self.visit(unit)
            if isinstance(binding, rx.VarBinding) and isinstance(binding.value, rx.Tuple):
                self.tuples[id(unit.var)] = binding.value
            bindings.append(binding)
        return dataclasses.replace(block, bindings=tuple(bindings))

    def _groups(self, block: rx.DataflowBlock) -> dict[int, _GroupFunction]:
        groups: dict[int, _GroupFunction] = {}
        for binding in block.bindings:
            group = self.group_of.get(id(binding.var))
            if group is not None and group.num_nodes > 1:
                groups.setdefault(id(group), _GroupFunction([])).bindings.append(binding)
        # A single-binding group (its other members were constants) is left alone.
        return {key: g for key, g in groups.items() if len(g.bindings) > 1}

    def _units(self, block, groups: dict[int, _GroupFunction]) -> list:
        """Bindings and groups in an order that defines every variable before its use."""
        unit_of: dict[int, object] = {}
        for binding in block.bindings:
            group = self.group_of.get(id(binding.var))
            unit_of[id(binding.var)] = groups.get(id(group), binding) if group is not None else binding
        for group in groups.values():
            members = {id(b.var) for b in group.bindings}
            for binding in block.bindings:
                users_outside = unit_of[id(binding.var)] is not group
                for operand in free_vars(binding.value):
                    if id(operand) in members and users_outside and all(o is not operand for o in group.outputs):
                        group.outputs.append(operand)
            for binding in group.bindings:
                if not isinstance(binding.var, rx.DataflowVar) and all(o is not binding.var for o in group.outputs):
                    group.outputs.append(binding.var)
            order = {id(b.var): i for i, b in enumerate(group.bindings)}
            group.outputs.sort(key=lambda var: order[id(var)])
        ordered, done, pending = [], set(), []
        for binding in block.bindings:
            unit = unit_of[id(binding.var)]
            if all(unit is not p for p in pending):
                pending.append(unit)
        needs: dict[int, set[int]] = {}
        for unit in pending:
            members = unit.bindings if isinstance(unit, _GroupFunction) else [unit]
            needs[id(unit)] = {id(unit_of[id(v)]) for b in members for v in free_vars(b.value)
                               if id(v) in unit_of} - {id(unit)}
        while pending:
            for position, unit in enumerate(pending):
                if needs[id(unit)] <= done:
                    ordered.append(unit)
                    done.add(id(unit))
                    del pending[position]
                    break
            else:  # a cycle cannot happen with post-dominator groups; keep the original order
                ordered.extend(pending)
                break
        return ordered

    def _call_group(self, group: _GroupFunction) -> list[rx.Binding]:
        if not group.outputs:  # nothing uses the group: leave it for dead-code elimination
            return [self.visit(binding) for binding in group.bindings]
        func, arguments = _make_function(group)
        name = self._add_function(group.name, func)
        bindings: list[rx.Binding] = []
        arguments = [self.visit(argument) for argument in arguments]
        # Call arguments must be leaves: a tuple field passed alone is bound first,
        # or taken straight from the tuple when the block built it. (The name is used
        # up either way, so that later names are those TVM's block builder gives.)
        for position, argument in enumerate(arguments):
            if isinstance(argument, rx.TupleGetItem):
                var = self.fresh(rx.DataflowVar(""), func.params[position].struct_info)
                built = self.tuples.get(id(argument.tuple_value))
                if built is not None:
                    arguments[position] = built.fields[argument.index]
                    continue
                bindings.append(rx.VarBinding(var, argument))
                arguments[position] = var
        call = rx.Call(rx.GlobalVar(name), tuple(arguments))
        last = group.bindings[-1].var
        if len(group.outputs) == 1:
            (output,) = group.outputs
            result = self.fresh(last, output.struct_info or func.ret_struct_info)
            self.remember(output, result)
            return bindings + [rx.VarBinding(result, call)]
        result = self.fresh(last, func.ret_struct_info)
        bindings.append(rx.VarBinding(result, call))
        for index, output in enumerate(group.outputs):
            item = self.fresh(output, output.struct_info or func.ret_struct_info.fields[index])
            self.remember(output, item)
            bindings.append(rx.VarBinding(item, rx.TupleGetItem(result, index)))
        return bindings

    def _add_function(self, base: str, func: rx.Function) -> str:
        for name, existing in self.created:
            if structural_equal(existing, func):
                return name
        name, suffix = base, 0
        while name in self.module_names:
            suffix += 1
            name = f"{base}{suffix}"
        self.module_names.add(name)
        self.created.append((name, func))
        return name


def _make_function(group: _GroupFunction) -> tuple[rx.Function, list[rx.Expr]]:
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
    symbols = free_symbolic_vars(func)
    if symbols:
        params.append(rx.Var("tir_vars", ShapeStructInfo(tuple(symbols))))
        arguments.append(rx.ShapeExpr(tuple(symbols)))
        func = dataclasses.replace(func, params=tuple(params))
    renewed = {var: tir.Var(var.name, var.dtype) for var in _symbols_of(func)}
    return substitute(func, renewed), arguments


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


def _split_tuple_params(group: _GroupFunction, params, arguments):
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


@register_pass
class FuseOps(Pass):
    """Group kernels of dataflow blocks into primitive functions, as TVM's FuseOps."""

    name = "fuse-ops"

    def run(self, mod: IRModule) -> IRModule:
        # Fusion reads the struct info of every binding: make sure it is there.
        mod = get_pass("normalize").run(mod)
        builder = _GraphBuilder(mod)
        for func in mod.functions.values():
            if _is_fusable_function(func):
                builder.visit(func)
        depth = int(PassContext.current().get_config("relax.FuseOps.max_depth", MAX_FUSE_DEPTH))
        groups = GraphPartitioner(builder.graph, depth).partition()
        group_of = {id(node.ref): groups[node.index].find_root() for node in builder.graph.nodes}
        created: list[tuple[str, rx.Function]] = []
        names, variable_names = set(mod.functions), {}
        functions = dict(mod.functions)
        for name, func in mod.functions.items():
            if _is_fusable_function(func):
                functions[name] = _Fusor(group_of, names, created, variable_names).visit(func)
        if not created:
            return mod
        functions.update(created)
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
