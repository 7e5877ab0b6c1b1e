"""PropagateSharding: from a few `R.dist.annotate_sharding` hints to a DTensor layout for
every tensor of a function, as TVM's relax.distributed PropagateSharding does.

    I.module_global_infos({"mesh": [R.device_mesh((2,), I.Range(0, 2))]})
    def main(x: R.Tensor((4, 8)), w1: R.Tensor((8, 16)), b1: R.Tensor((16,)), ...):
        w1a = R.dist.annotate_sharding(w1, device_mesh="mesh[0]", placement="S[1]")
        h = R.matmul(x, w1a)                 ->  def main(x: R.DTensor((4, 8), "float32", "mesh[0]", "R"),
        hb = R.add(h, b1)                                 w1: R.DTensor((8, 16), "float32", "mesh[0]", "S[1]"),
                                                          b1: R.DTensor((16,), "float32", "mesh[0]", "S[0]"), ...):
                                                 h: R.DTensor((4, 16), "float32", "mesh[0]", "S[1]") = R.matmul(x, w1)
                                                 hb: R.DTensor((4, 16), "float32", "mesh[0]", "S[1]") = R.add(h, b1)

Only modules with a device mesh and functions with an annotation (or DTensor
parameters) change. Layouts flow forward and backward through the operators
(sharding_rules.py) until nothing changes; what stays unknown is replicated. The hints
go: each use of an annotated value reads its source. A hint naming a mesh the module
lacks, a placement that does not fit, two splits meeting, or an operator without a rule
on a split input is an error at the call that shows it.
"""

from __future__ import annotations

from ..diagnostics import DiagnosticError, error
from ..ir import expr as rx
from ..ir.dtensor import (
    DTensorStructInfo, ShardingError, check_placement, has_device_mesh, parse_placement, resolve_mesh, shard_axis,
)
from ..ir.module import IRModule
from ..ir.pass_infra import Pass, register_pass
from ..ir.struct_info import TensorStructInfo
from ..ir.visitor import ExprMutator
from ..op.registry import get as get_op
from .sharding_rules import rule_for

ANNOTATE = "relax.dist.annotate_sharding"


def _entries(placement) -> list:
    return ["R" if shard_axis(p) is None else shard_axis(p) for p in placement]


def _placement(entries) -> tuple[str, ...]:
    return tuple("R" if e in (None, "R") else f"S[{e}]" for e in entries)


class Layouts:
    """The layout found for each variable of one function: entries per mesh axis."""

    def __init__(self, mod: IRModule):
        self.mod = mod
        self.mesh_ref: str | None = None
        self.mesh = None
        self.of: dict[int, list] = {}
        self.changed = False

    def use_mesh(self, reference: str, span) -> None:
        if self.mesh_ref is not None and reference != self.mesh_ref:
            raise error(f"a function is laid out on one device mesh: '{self.mesh_ref}' and '{reference}' meet", span)
        try:
            self.mesh = resolve_mesh(self.mod.global_infos, reference)
        except ShardingError as problem:
            raise error(str(problem), span) from None
        self.mesh_ref = reference

    def seed(self, var: rx.Var, placement: tuple[str, ...], span) -> None:
        info = var.struct_info
        try:
            check_placement(placement, self.mesh, getattr(info, "ndim", -1), self.mesh_ref)
        except ShardingError as problem:
            raise error(str(problem), span) from None
        self.merge(var, _entries(placement), span)

    def get(self, var) -> list:
        return self.of.setdefault(id(var), [None] * len(self.mesh["shape"]))

    def merge(self, var, entries, span) -> None:
        current = self.get(var)
        for axis, entry in enumerate(entries):
            if entry is None or current[axis] == entry:
                continue
            if current[axis] is not None:
                raise error(f"'{var.name_hint}' is laid out both as {_placement([current[axis]])[0]} and as "
                            f"{_placement([entry])[0]} on mesh axis {axis}", span)
            current[axis] = entry
            self.changed = True


def _bindings(func: rx.Function) -> list[rx.VarBinding]:
    body = func.body
    found = []
    for block in body.blocks:
        for binding in block.bindings:
            if not isinstance(binding, rx.VarBinding) or not isinstance(binding.value, (rx.Call, rx.Var)):
                raise error("propagate-sharding handles bindings of operator calls and variables only", binding.span)
            found.append(binding)
    return found


def _tensor_args(call: rx.Call) -> list:
    return [a for a in call.args if isinstance(a, rx.Var) and isinstance(a.struct_info, TensorStructInfo)]


def _step(layouts: Layouts, binding: rx.VarBinding) -> None:
    value = binding.value
    if isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name == ANNOTATE:
        value = value.args[0]  # the hint is its input
    if isinstance(value, rx.Var):
        entries = layouts.get(value)
        layouts.merge(binding.var, entries, binding.span)
        layouts.merge(value, layouts.get(binding.var), binding.span)
        return
    if not isinstance(value.op, rx.Op) or get_op(value.op.name) is None:
        raise error("propagate-sharding handles calls of operators only", value.span or binding.span)
    op = get_op(value.op.name)
    args = _tensor_args(value)
    rule = rule_for(op, value.attrs)
    infos = [a.struct_info for a in args]
    out_entries = layouts.get(binding.var)
    for axis in range(len(out_entries)):
        try:
            out, back = rule([layouts.get(a)[axis] for a in args], out_entries[axis], infos, binding.var.struct_info)
        except ShardingError as problem:
            raise error(f"cannot shard {op.script_name}: {problem}", value.span or binding.span) from None
        layouts.merge(binding.var, [out if i == axis else None for i in range(len(out_entries))], binding.span)
        for arg, entry in zip(args, back):
            layouts.merge(arg, [entry if i == axis else None for i in range(len(out_entries))], binding.span)


def propagate(mod: IRModule, func: rx.Function) -> Layouts | None:
    """The layouts of `func`'s variables, or None when it has nothing to shard."""
    layouts = Layouts(mod)
    bindings = _bindings(func)
    for param in func.params:
        if isinstance(param.struct_info, DTensorStructInfo):
            layouts.use_mesh(param.struct_info.device_mesh, param.span)
            layouts.seed(param, param.struct_info.placement, param.span)
    for binding in bindings:
        value = binding.value
        if isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name == ANNOTATE:
            layouts.use_mesh(value.attrs["device_mesh"], value.span or binding.span)
            layouts.seed(value.args[0], parse_placement(value.attrs["placement"]), value.span or binding.span)
    if layouts.mesh is None:
        return None
    for _ in range(2 * len(bindings) + 2):
        layouts.changed = False
        for binding in bindings:
            _step(layouts, binding)
        for binding in reversed(bindings):
            _step(layouts, binding)
        if not layouts.changed:
            break
    return layouts


class _Annotate(ExprMutator):
    """Rewrites a function with DTensor struct info from its layouts, the hints removed."""

    def __init__(self, layouts: Layouts):
        super().__init__()
        self.layouts = layouts

    def info(self, var: rx.Var):
        info = var.struct_info
        if not isinstance(info, TensorStructInfo):
            return info
        return DTensorStructInfo(info.shape, info.dtype, info.ndim, None, self.layouts.mesh_ref,
                                 _placement(self.layouts.get(var)), span=info.span)

    def visit_BindingBlock(self, block: rx.BindingBlock) -> rx.BindingBlock:
        kept = []
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name == ANNOTATE:
                self.remember(binding.var, self.visit(value.args[0]))
                continue
            new_value = self.visit(value)
            var = binding.var.with_fields(struct_info=self.info(binding.var))
            self.remember(binding.var, var)
            kept.append(binding.with_fields(var=var, value=new_value))
        return block.with_fields(bindings=tuple(kept))

    def function(self, func: rx.Function) -> rx.Function:
        params = []
        for param in func.params:
            new = param.with_fields(struct_info=self.info(param))
            self.remember(param, new)
            params.append(new)
        body = self.visit(func.body)
        result = body.body
        ret = self.info(result) if isinstance(result, rx.Var) else func.ret_struct_info
        return func.with_fields(params=tuple(params), body=body, ret_struct_info=ret)


@register_pass
class PropagateSharding(Pass):
    """Give every tensor of an annotated function a DTensor layout on the module's device mesh."""

    name = "propagate-sharding"

    def run(self, mod: IRModule) -> IRModule:
        if not has_device_mesh(mod):
            return mod
        functions = dict(mod.functions)
        errors = []
        for name, func in mod.functions.items():
            if not isinstance(func, rx.Function):
                continue
            try:
                layouts = propagate(mod, func)
            except DiagnosticError as failure:
                errors.extend(failure.diagnostics)
                continue
            if layouts is not None:
                functions[name] = _Annotate(layouts).function(func)
        if errors:
            raise DiagnosticError(errors)
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
