"""What a legalization may do: turn a tensor expression into a PrimFunc and a call.

`LegalizeContext.call_te(fcompute, args, name)` makes te placeholders for the tensor
arguments (their shapes from struct info, symbolic sizes renamed into the new
PrimFunc), runs `fcompute`, builds the PrimFunc with te.create_prim_func, gives it
a name unique in the module, and returns the `R.call_tir` that calls it. A symbolic
size that no buffer dimension names alone (n, when every buffer is (n * 2,)) is
passed as a `tir_var`.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..ir import expr as rx
from ..ir import tir
from ..ir.names import fresh_name
from ..ir.node import Node, field_values
from ..ir.struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from . import te


def substitute_prim(expr, mapping: dict[int, tir.PrimExpr]):
    """Replaces TIR vars (keyed by id) inside a PrimExpr."""
    if isinstance(expr, tir.Var):
        return mapping.get(id(expr), expr)
    if not isinstance(expr, Node):
        return expr
    changes = {}
    for name, value in field_values(expr):
        if isinstance(value, tir.PrimExpr):
            new = substitute_prim(value, mapping)
        elif isinstance(value, tuple) and value and isinstance(value[0], tir.PrimExpr):
            new = tuple(substitute_prim(v, mapping) for v in value)
        else:
            continue
        if new is not value:
            changes[name] = new
    return expr.with_fields(**changes) if changes else expr


def symbolic_vars(exprs: Sequence[tir.PrimExpr]) -> list[tir.Var]:
    """TIR vars in the expressions, in first-appearance order, without repeats."""
    found: list[tir.Var] = []

    def walk(e) -> None:
        if isinstance(e, tir.Var):
            if all(e is not known for known in found):
                found.append(e)
        elif isinstance(e, Node):
            for _, value in field_values(e):
                for item in value if isinstance(value, tuple) else (value,):
                    if isinstance(item, tir.PrimExpr):
                        walk(item)

    for expr in exprs:
        walk(expr)
    return found


class LegalizeContext:
    def __init__(self, taken_names: set[str] | None = None):
        self.taken_names = set(taken_names or ())
        self.new_functions: dict[str, tir.PrimFunc] = {}
        # The Relax and TIR variable names of the function being legalized (one Python
        # scope when printed), and whether the binding is in a dataflow block: what a
        # legalization that adds bindings (op/runtime_shape.py) names and makes.
        self.local_names: set[str] = set()
        self.in_dataflow = False

    def unique_name(self, hint: str) -> str:
        return fresh_name(hint, self.taken_names)

    def local_var(self, hint: str, info: StructInfo) -> rx.Var:
        """A new Relax variable of the function being legalized, local to its dataflow block if in one."""
        kind = rx.DataflowVar if self.in_dataflow else rx.Var
        return kind(fresh_name(hint, self.local_names), info)

    def local_size(self, hint: str) -> tir.Var:
        """A new int64 symbolic size of the function being legalized."""
        return tir.Var(fresh_name(hint, self.local_names, "_"), "int64")

    def call_te(self, fcompute: Callable[..., te.Tensor | tuple], args: Sequence[rx.Expr],
                arg_info: Sequence[StructInfo], name: str, extra: Sequence = ()) -> rx.Call | None:
        """`R.call_tir` of a new PrimFunc computing `fcompute(*placeholders, *extra)`.

        Returns None when a tensor argument's shape is not known statically enough
        (no shape values): the operator then stays as it is. Symbolic sizes that only
        an output shape mentions need no scalar parameter: the kernel binds every
        size from its buffers' shapes, outputs included (as TVM's legalization does).
        A size that no buffer dimension names alone is passed as a tir_var.
        """
        leaves = _tensor_leaves(args, arg_info)
        if leaves is None:
            return None
        outer_vars: list[tir.Var] = []
        for _, info, _ in leaves:
            outer_vars += [v for v in symbolic_vars(info.shape_values) if all(v is not k for k in outer_vars)]
        inner_of = {id(v): tir.Var(v.name, v.dtype) for v in outer_vars}
        placeholders = []
        for index, (_, info, _) in enumerate(leaves):
            shape = tuple(substitute_prim(d, inner_of) for d in info.shape_values)
            placeholders.append(te.placeholder(shape, info.dtype, _buffer_name(index)))
        grouped = _regroup(placeholders, [group for _, _, group in leaves], len(args))
        result = fcompute(*grouped, *extra)
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        func_name = self.unique_name(name)
        func, copies = _own_symbolic_vars(te.create_prim_func(placeholders + outputs), outer_vars, inner_of)
        outer_of = {id(inner_of[id(v)]): v for v in outer_vars}
        outer_of.update((id(copy), var) for var, copy in copies.items())
        func, tir_vars = _size_parameters(func, outer_of)
        self.new_functions[func_name] = func
        out_infos = [
            TensorStructInfo(rx.ShapeExpr(tuple(substitute_prim(d, outer_of) for d in out.shape)), out.dtype)
            for out in outputs
        ]
        out_sinfo = out_infos[0] if len(out_infos) == 1 and not isinstance(result, (tuple, list)) else TupleStructInfo(tuple(out_infos))
        call_args = (rx.GlobalVar(func_name), rx.Tuple(tuple(expr for expr, _, _ in leaves)))
        if tir_vars:
            call_args += (rx.ShapeExpr(tir_vars),)
        return rx.Call(rx.Op("relax.call_tir"), call_args, sinfo_args=(out_sinfo,))


def _own_symbolic_vars(func: tir.PrimFunc, outer_vars: list[tir.Var], inner_of: dict[int, tir.Var]) -> tir.PrimFunc:
    """The PrimFunc using only its own symbolic variables: a size the legalization
    computed from the caller's variables (a reshape to (n * m,)) is rewritten to the
    kernel's copies, and a variable only an output shape mentions gets its own copy."""
    from ..ir.analysis import substitute

    inner = {id(v) for v in inner_of.values()}
    shapes = [d for _, buffer in func.buffer_map for d in buffer.shape]
    mapping = {v: inner_of[id(v)] for v in outer_vars}
    copies = {}
    for var in symbolic_vars(shapes):
        if id(var) not in inner and var not in mapping:
            mapping[var] = copies[var] = tir.Var(var.name, var.dtype)
    return (substitute(func, mapping) if mapping else func), copies


def _size_parameters(func: tir.PrimFunc, outer_of: dict[int, tir.Var]) -> tuple[tir.PrimFunc, tuple]:
    """The kernel with a scalar parameter for each size no buffer dimension names
    alone (n, when every buffer is (n * 2,)), and the caller's sizes to pass for them
    as tir_vars. A kernel binds a size from a buffer dimension that is the bare
    variable; an expression of it (n * 2) can only be checked, as TVM's call_te
    passes such sizes too."""
    dims = [d for _, buffer in func.buffer_map for d in buffer.shape]
    named = {id(d) for d in dims if isinstance(d, tir.Var)}
    unbound = tuple(v for v in symbolic_vars(dims) if id(v) not in named)
    if not unbound:
        return func, ()
    return func.with_fields(params=tuple(func.params) + unbound), tuple(outer_of.get(id(v), v) for v in unbound)


def _is_static_tensor(info) -> bool:
    return isinstance(info, TensorStructInfo) and info.shape_values is not None and info.dtype != "void"


def _tensor_leaves(args, arg_info):
    """(expression, struct info, argument position) of every tensor among the
    arguments, tuples of tensors flattened; None if some shape is not known."""
    leaves = []
    for position, (arg, info) in enumerate(zip(args, arg_info)):
        if isinstance(info, TupleStructInfo):
            for index, field_info in enumerate(info.fields):
                if not _is_static_tensor(field_info):
                    return None
                field = arg.fields[index] if isinstance(arg, rx.Tuple) else rx.TupleGetItem(arg, index)
                leaves.append((field, field_info, (position, index)))
        elif _is_static_tensor(info):
            leaves.append((arg, info, (position, None)))
        else:
            return None
    return leaves


def _regroup(placeholders, groups, count):
    """The placeholders shaped like the arguments: a list for each tuple argument."""
    result: list = [None] * count
    for placeholder, (position, index) in zip(placeholders, groups):
        if index is None:
            result[position] = placeholder
        else:
            if result[position] is None:
                result[position] = []
            result[position].append(placeholder)
    return result


def _buffer_name(index: int) -> str:
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[index] if index < 26 else f"in{index}"
