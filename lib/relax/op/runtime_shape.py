"""Legalization of elementwise operators on tensors whose shape is known only at run time.

A kernel needs its buffers' ranks. When an operand's shape is not known statically
(R.Tensor(dtype="float32"), unknown rank, or R.Tensor(ndim=2)), a unary operator
runs over the flat element count:

    y: R.Tensor(dtype="float32") = R.exp(x)
becomes
    x_flat: R.Tensor(ndim=1, dtype="float32") = R.call_pure_packed("vm.builtin.flatten", x, ...)
    x_flat1: R.Tensor((n,), dtype="float32") = R.match_cast(x_flat, R.Tensor((n,), dtype="float32"))
    lv: R.Tensor((n,), dtype="float32") = R.call_tir(cls.exp, (x_flat1,), out_sinfo=R.Tensor((n,), dtype="float32"))
    x_shape: R.Shape(ndim=-1) = R.shape_of(x)
    y: R.Tensor(dtype="float32") = R.call_pure_packed("vm.builtin.reshape", lv, x_shape, ...)

and a binary operator broadcasts at run time: vm.builtin.broadcast_shape gives the
result's shape (or the error `cannot broadcast (2, 3) with (4,) in R.add`), and
vm.builtin.broadcast_plan the sizes d0..d3 of a BROADCAST_RANK-dimensional loop nest
and each operand's strides in it, bound to symbolic sizes by a match_cast. The kernel
reads each flattened operand at the dot product of the loop indices and its strides
(vm/machine/broadcast.py merges dimensions, so same-shape operands are one flat loop).
Views, shapes and plans are runtime builtins; every element is computed by a kernel.
"""

from __future__ import annotations

from typing import Callable

from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import ShapeStructInfo, TensorStructInfo
from . import te

# Dimensions of the broadcast kernels' loop nests: enough for a broadcast whose
# operands alternate repeating three times after merging, such as (N, C, H, W) + (C, 1, 1).
BROADCAST_RANK = 4


def known_dtypes(infos) -> bool:
    """Whether every operand is a tensor of a known dtype: what a kernel needs besides shapes."""
    return all(isinstance(info, TensorStructInfo) and info.dtype != "void" for info in infos)


def needs_runtime_shape(infos) -> bool:
    """Whether an elementwise call over tensors of these struct infos compiles through
    runtime shapes: some shape is not known statically, while every dtype is."""
    return known_dtypes(infos) and any(info.shape_values is None for info in infos)


class _Prelude:
    """The bindings a legalization adds before the call's own binding."""

    def __init__(self, context, span):
        self.context = context
        self.span = span
        self.bindings: list[rx.Binding] = []

    def bind(self, hint: str, value: rx.Expr, info) -> rx.Var:
        var = self.context.local_var(hint, info)
        self.bindings.append(rx.VarBinding(var, _with_span(value, self.span), span=self.span))
        return var

    def match_cast(self, hint: str, value: rx.Expr, info) -> rx.Var:
        var = self.context.local_var(hint, info)
        self.bindings.append(rx.MatchCast(var, value, info, span=self.span))
        return var

    def flat(self, tensor: rx.Expr, info: TensorStructInfo, size: tir.Var, role: str) -> rx.Var:
        """A 1-d view of `tensor`, its length bound to `size`."""
        hint = f"{getattr(tensor, 'name_hint', role)}_flat"
        view = self.bind(hint, packed("vm.builtin.flatten", (tensor,), TensorStructInfo(None, info.dtype, 1)),
                         TensorStructInfo(None, info.dtype, 1))
        return self.match_cast(hint, view, TensorStructInfo(rx.ShapeExpr((size,)), info.dtype))

    def shape_of(self, tensor: rx.Expr, info: TensorStructInfo, role: str) -> rx.Var:
        hint = f"{getattr(tensor, 'name_hint', role)}_shape"
        return self.bind(hint, rx.Call(rx.Op("relax.shape_of"), (tensor,)), ShapeStructInfo(ndim=info.ndim))

    def seq(self, body: rx.Expr) -> rx.SeqExpr:
        return rx.SeqExpr((rx.BindingBlock(tuple(self.bindings)),), _with_span(body, self.span))


def _with_span(value: rx.Expr, span) -> rx.Expr:
    return value.with_fields(span=span) if isinstance(value, rx.Call) else value


def packed(name: str, args, info) -> rx.Call:
    """R.call_pure_packed(name, *args, sinfo_args=(info,))."""
    return rx.Call(rx.Op("relax.call_pure_packed"), (rx.ExternFunc(name), *args), sinfo_args=(info,))


def _result_info(call) -> TensorStructInfo:
    """The call's result struct info without a shape: only the runtime knows it."""
    out = call.op.infer(call)
    return TensorStructInfo(None, out.dtype, out.ndim)


def unary(call, context, fcompute: Callable[[te.Tensor], te.Tensor], name: str) -> rx.SeqExpr:
    """`fcompute` (elementwise) over the flattened operand, reshaped back to its shape."""
    x, info = call.args[0], call.arg_info[0]
    prelude = _Prelude(context, call.call.span)
    size = context.local_size("n")
    flat = prelude.flat(x, info, size, "x")
    kernel_call = context.call_te(fcompute, (flat,), (flat.struct_info,), name)
    out = prelude.bind("lv", kernel_call, kernel_call.sinfo_args[0])
    shape = prelude.shape_of(x, info, "x")
    result = _result_info(call)
    return prelude.seq(packed("vm.builtin.reshape", (out, shape), result))


def binary(call, context, element: Callable, name: str) -> rx.SeqExpr:
    """`element(a, b)` broadcast at run time: see the module docstring."""
    (lhs, rhs), (lhs_info, rhs_info) = call.args, call.arg_info
    prelude = _Prelude(context, call.call.span)
    lhs_shape, rhs_shape = prelude.shape_of(lhs, lhs_info, "lhs"), prelude.shape_of(rhs, rhs_info, "rhs")
    result = _result_info(call)
    op_name = rx.StringImm(call.op.script_name)
    out_shape = prelude.bind("out_shape", packed("vm.builtin.broadcast_shape", (lhs_shape, rhs_shape, op_name),
                                                 ShapeStructInfo(ndim=result.ndim)), ShapeStructInfo(ndim=result.ndim))
    rank = BROADCAST_RANK
    plan_info = ShapeStructInfo(ndim=3 * rank)
    plan_args = (lhs_shape, rhs_shape, rx.PrimValue(tir.IntImm("int64", rank)), op_name)
    plan = prelude.bind("plan", packed("vm.builtin.broadcast_plan", plan_args, plan_info), plan_info)
    sizes = [context.local_size(f"d{axis}") for axis in range(rank)]
    lhs_strides = [context.local_size(f"lhs_stride{axis}") for axis in range(rank)]
    rhs_strides = [context.local_size(f"rhs_stride{axis}") for axis in range(rank)]
    prelude.match_cast("plan", plan, ShapeStructInfo((*sizes, *lhs_strides, *rhs_strides)))
    lhs_flat = prelude.flat(lhs, lhs_info, context.local_size("lhs_n"), "lhs")
    rhs_flat = prelude.flat(rhs, rhs_info, context.local_size("rhs_n"), "rhs")
    kernel_call = _broadcast_kernel(context, name, element, (lhs_flat, rhs_flat), sizes, (lhs_strides, rhs_strides))
    out = prelude.bind("lv", kernel_call, kernel_call.sinfo_args[0])
    return prelude.seq(packed("vm.builtin.reshape", (out, out_shape), result))


def _broadcast_kernel(context, name: str, element: Callable, operands, sizes, strides) -> rx.Call:
    """R.call_tir of a new kernel: out[i0, .., i3] = element(a[i . a_strides], b[i . b_strides]),
    the loop sizes bound from the output buffer and the strides passed as tir_vars."""
    # The kernel's own variables have the same names at every call (d0, lhs_stride0, ...), not
    # the caller's numbered ones (d0_7): two calls of one operator and dtypes are then one
    # kernel body, built once (codegen/kernel_dedup.py), however many calls a program has.
    roles = [(sizes, "d{}"), (strides[0], "lhs_stride{}"), (strides[1], "rhs_stride{}")]
    inner = {id(var): tir.Var(pattern.format(axis), "int64")
             for group, pattern in roles for axis, var in enumerate(group)}
    placeholders = []
    for index, operand in enumerate(operands):
        length = tir.Var(("lhs_n", "rhs_n")[index], "int64")
        placeholders.append(te.placeholder((length,), operand.struct_info.dtype, "AB"[index]))
    lhs, rhs = placeholders
    lhs_strides = [inner[id(v)] for v in strides[0]]
    rhs_strides = [inner[id(v)] for v in strides[1]]

    def body(*index):
        return element(lhs[_offset(index, lhs_strides)], rhs[_offset(index, rhs_strides)])

    out = te.compute(tuple(inner[id(v)] for v in sizes), body, f"T_{name}")
    func_name = context.unique_name(name)
    context.new_functions[func_name] = te.create_prim_func([lhs, rhs, out], tir_var_params=(*lhs_strides, *rhs_strides))
    out_info = TensorStructInfo(rx.ShapeExpr(tuple(sizes)), out.dtype)
    call_args = (rx.GlobalVar(func_name), rx.Tuple(tuple(operands)), rx.ShapeExpr((*strides[0], *strides[1])))
    return rx.Call(rx.Op("relax.call_tir"), call_args, sinfo_args=(out_info,))


def _offset(index, strides) -> tir.PrimExpr:
    """The flat offset sum(index[k] * strides[k])."""
    total: tir.PrimExpr = tir.Mul(index[0], strides[0])
    for axis, stride in zip(index[1:], strides[1:]):
        total = tir.Add(total, tir.Mul(axis, stride))
    return total
