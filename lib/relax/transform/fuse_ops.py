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
several results returns a tuple (fusion_function.py builds the functions). FuseTIR
then turns each primitive function into one kernel. `--pass-config
relax.FuseOps.max_depth=N` bounds the group size.
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as rx
from ..ir import tir
from ..ir.analysis import free_vars
from ..ir.module import IRModule
from ..ir.names import fresh_name
from ..ir.structural import structural_key
from ..ir.visitor import ExprMutator, ExprVisitor
from .annotate_tir_op_pattern import INJECTIVE, OPAQUE
from .fusion_function import CALL_TIR, GroupFunction, leaves, make_function
from .fusion_graph import MAX_FUSE_DEPTH, DataflowGraph, Group, GraphPartitioner
from ..ir.pass_infra import Pass, PassContext, get_pass, register_pass


def _is_fusable_function(func) -> bool:
    return isinstance(func, rx.Function) and not func.attrs.get("Primitive") and "Codegen" not in func.attrs


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
            pattern, operands, edge = INJECTIVE, list(leaves(value.tuple_value)), INJECTIVE
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
            return int(pattern), list(leaves(call.args[1]))
        return OPAQUE, [leaf for arg in call.args for leaf in leaves(arg)]

    def _operand(self, expr: rx.Expr):
        node = self.graph.get(expr)
        if node is None:
            # A constant, or a variable from an ordinary block: never fused.
            node = self.graph.add(expr, OPAQUE, extern_ref=isinstance(expr, rx.Var))
        return node


def _leaves_in(expr: rx.Expr) -> list[rx.Var]:
    return free_vars(expr)


class _Fusor(ExprMutator):
    """Rewrites the dataflow blocks of one function, adding group functions to `new_functions`."""

    def __init__(self, group_of: dict[int, Group], module_names: set[str], created: list[tuple[str, rx.Function]],
                 names: dict[str, int]):
        super().__init__()
        self.group_of = group_of
        self.module_names = module_names
        self.created = created
        self.created_keys: dict[int, list] = {}  # id of a function in `created` -> its structural_key
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
            if isinstance(unit, GroupFunction):
                bindings.extend(self._call_group(unit))
                continue
            binding = self.visit(unit)
            if isinstance(binding, rx.VarBinding) and isinstance(binding.value, rx.Tuple):
                self.tuples[id(unit.var)] = binding.value
            bindings.append(binding)
        return dataclasses.replace(block, bindings=tuple(bindings))

    def _groups(self, block: rx.DataflowBlock) -> dict[int, GroupFunction]:
        groups: dict[int, GroupFunction] = {}
        for binding in block.bindings:
            group = self.group_of.get(id(binding.var))
            if group is not None and group.num_nodes > 1:
                groups.setdefault(id(group), GroupFunction([])).bindings.append(binding)
        # A single-binding group (its other members were constants) is left alone.
        return {key: g for key, g in groups.items() if len(g.bindings) > 1}

    def _units(self, block, groups: dict[int, GroupFunction]) -> list:
        """Bindings and groups in an order that defines every variable before its use."""
        unit_of: dict[int, object] = {}
        # Each binding's operands, found once: every group below scans every binding.
        operands: dict[int, list[rx.Var]] = {}
        for binding in block.bindings:
            group = self.group_of.get(id(binding.var))
            unit_of[id(binding.var)] = groups.get(id(group), binding) if group is not None else binding
            operands[id(binding)] = free_vars(binding.value)
        for group in groups.values():
            members = {id(b.var) for b in group.bindings}
            for binding in block.bindings:
                users_outside = unit_of[id(binding.var)] is not group
                for operand in operands[id(binding)]:
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
            members = unit.bindings if isinstance(unit, GroupFunction) else [unit]
            needs[id(unit)] = {id(unit_of[id(v)]) for b in members for v in operands[id(b)]
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

    def _call_group(self, group: GroupFunction) -> list[rx.Binding]:
        if not group.outputs:  # nothing uses the group: leave it for dead-code elimination
            return [self.visit(binding) for binding in group.bindings]
        func, arguments = make_function(group)
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
        # structural_equal against each function created so far, through their keys: each
        # function is read once, not once per comparison.
        key = structural_key(func)
        for name, existing in self.created:
            existing_key = self.created_keys.get(id(existing))
            if existing_key is None:
                existing_key = self.created_keys[id(existing)] = structural_key(existing)
            if existing is func or existing_key == key:
                return name
        name = fresh_name(base, self.module_names)
        self.created.append((name, func))
        self.created_keys[id(func)] = key
        return name


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
