"""Operators that matter to training and parameter transforms, and what they are at
inference: R.call_tir_with_grad (a call_tir carrying the name and arguments of its
gradient), R.call_inplace_packed (a packed call that writes some outputs into its
arguments), R.builtin.stop_lift_params, R.wrap_param, R.grad.no_grad,
R.grad.start_checkpoint and R.grad.end_checkpoint.

Legalization gives their inference meaning:

    y = R.call_tir_with_grad(cls.k, (x,), out_sinfo=S, te_grad_name="g")  ->  R.call_tir(cls.k, (x,), out_sinfo=S)
    y = R.call_inplace_packed("f", x, inplace_indices=[0], sinfo_args=S)   ->  R.call_pure_packed("f", x, sinfo_args=S)
    y = R.grad.no_grad(x)                                                   ->  y = x   (likewise the checkpoints
                                                                                         and stop_lift_params)
    y = R.wrap_param(w, dtype="float16")                                    ->  R.astype(w, "float16"), or w
                                                                                         when w is float16

The gradient attributes stay on the call until then (a parsed, printed or .vms module
keeps them); they are what a Gradient pass would read.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir.node import FrozenDict
from ..ir.struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ..ir.structural import structural_equal
from . import registry
from .registry import AttrSpec, OpDef, register
from .shape import tensor_info


def _from_sinfo_args(call) -> StructInfo:
    if not call.call.sinfo_args:
        raise call.error("needs the struct info of its result (out_sinfo=...)")
    return call.call.sinfo_args[0]


# -- call_tir_with_grad ----------------------------------------------------------------------
def _grad_name_check(value) -> str | None:
    return None if isinstance(value, str) and value else "expected the name of a gradient function"


def _grad_kwargs_check(value) -> str | None:
    # None (not given) stands for TVM's default, no keyword arguments.
    return None if value is None or isinstance(value, (dict, FrozenDict)) else "expected a dictionary of keyword arguments"


def _call_tir_with_grad_legalize(call, context):
    # At inference the gradient is never taken: the call is the call_tir it wraps.
    return rx.Call(rx.Op("relax.call_tir"), call.call.args, sinfo_args=call.call.sinfo_args)


register(OpDef("relax.call_tir_with_grad", ("func", "args", "*tir_vars"),
               (AttrSpec("te_grad_name", check=_grad_name_check),
                AttrSpec("te_grad_kwargs", None, _grad_kwargs_check)),
               _from_sinfo_args, "opaque", _call_tir_with_grad_legalize,
               "call_tir with the TE gradient function (te_grad_name, te_grad_kwargs) bound to it"))


# -- call_inplace_packed ----------------------------------------------------------------------
def _inplace_indices_check(value) -> str | None:
    items = value if isinstance(value, tuple) else (value,)
    if not items or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        return "expected an int or a non-empty list of ints"
    if all(v == -1 for v in items):
        return "at least one index must not be -1 (else use R.call_pure_packed)"
    return None


def _call_inplace_packed_infer(call) -> StructInfo:
    out = _from_sinfo_args(call)
    indices = call.attrs["inplace_indices"]
    indices = indices if isinstance(indices, tuple) else (indices,)
    outputs = out.fields if isinstance(out, TupleStructInfo) and len(indices) > 1 else (out,)
    if len(outputs) != len(indices):
        raise call.error(f"{len(indices)} in-place indices for {len(outputs)} outputs")
    operands = call.args[1:]
    for position, (index, output) in enumerate(zip(indices, outputs)):
        if index == -1:
            continue
        if not 0 <= index < len(operands):
            raise call.error(f"in-place index {index} is out of range for {len(operands)} arguments")
        if indices.count(index) > 1:
            raise call.error(f"in-place index {index} is given twice")
        arg_info = call.arg_info[1 + index]
        if not isinstance(arg_info, TensorStructInfo) or not _same_tensor(arg_info, output):
            raise call.error(f"output {position} must have the struct info of argument {index}, which it aliases")
    return out


def _same_tensor(a: TensorStructInfo, b: StructInfo) -> bool:
    return isinstance(b, TensorStructInfo) and a.dtype == b.dtype and a.ndim == b.ndim and \
        (a.shape is None or b.shape is None or structural_equal(a.shape, b.shape))


def _call_inplace_packed_legalize(call, context):
    # The packed function writes into its arguments itself; the VM calls it as any pure packed call.
    return rx.Call(rx.Op("relax.call_pure_packed"), call.call.args, sinfo_args=call.call.sinfo_args)


register(OpDef("relax.call_inplace_packed", ("func", "*args"),
               (AttrSpec("inplace_indices", check=_inplace_indices_check),),
               _call_inplace_packed_infer, "opaque", _call_inplace_packed_legalize,
               "call a packed function that returns some of its arguments, updated in place"))


# -- markers that are the identity at inference -------------------------------------------------
def _identity_infer(call) -> StructInfo:
    return tensor_info(call, 0).with_fields(span=None)


def _identity_legalize(call, context):
    return call.args[0]


_MARKERS = {
    "builtin.stop_lift_params": "the input; its consumers are not lifted into transform_params",
    "grad.no_grad": "the input, through which no gradient flows",
    "grad.start_checkpoint": "the input, starting a stage recomputed in the backward pass",
    "grad.end_checkpoint": "the input, ending a stage recomputed in the backward pass",
}
for _name, _doc in _MARKERS.items():
    register(OpDef(f"relax.{_name}", ("input",) if _name.startswith("grad") else ("x",), (), _identity_infer,
                   "opaque", _identity_legalize, _doc))


# -- wrap_param ----------------------------------------------------------------------------
def _dtype_check(value) -> str | None:
    return None if isinstance(value, str) and dt.is_valid(value) and value != "void" else "expected a data type"


def _wrap_param_infer(call) -> StructInfo:
    info = tensor_info(call, 0)
    return TensorStructInfo(info.shape, call.attrs["dtype"], info.ndim)


def _wrap_param_legalize(call, context):
    info = tensor_info(call, 0)
    if info.dtype == call.attrs["dtype"]:
        return _identity_legalize(call, context)
    return registry.get("relax.astype").legalize(call, context)


register(OpDef("relax.wrap_param", ("data",), (AttrSpec("dtype", "float32", _dtype_check),), _wrap_param_infer,
               "elementwise", _wrap_param_legalize, "a model parameter converted to dtype when it has another"))
