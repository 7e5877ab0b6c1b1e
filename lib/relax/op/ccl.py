"""Collective communication: R.ccl.allreduce, allgather, broadcast_from_worker0,
scatter_from_worker0.

Every worker of a Disco session runs the same program on its own shard; these
operators exchange tensors between the workers. They are opaque to the compiler:
each legalizes, as TVM's LegalizeOps does, to a destination-passing call of a
runtime builtin (runtime/disco_builtins.py) with the attributes as trailing values:

    a: R.Tensor((4, 6), dtype="float32") = R.ccl.allreduce(x, op_type="sum", in_group=True)
becomes
    a = R.call_dps_packed("runtime.disco.allreduce", (x, R.shape([0]), 1), out_ty=R.Tensor((4, 6), dtype="float32"))

A collective works on contiguous memory along axis 0, so a scatter along another
axis first reshapes and permutes that axis to the front: scattering (8, 6) over 2
workers along axis 1 sends (2, 8, 3) and each worker receives its (8, 3).
"""

from __future__ import annotations

from ..ir import expr as rx
from ..ir import tir
from ..runtime.disco_builtins import REDUCE_KINDS
from .infer import bind_call
from .registry import AttrSpec, OpDef, register
from .reshape import permute_legalize, reshape_legalize
from .shape import format_dim, format_shape, int64, make_tensor_info, static_value, tensor_info


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _op_type_check(value) -> str | None:
    return None if value in REDUCE_KINDS else f"expected one of {', '.join(REDUCE_KINDS)}"


def _workers_check(value) -> str | None:
    return None if _is_int(value) and value > 0 else "expected a positive number of workers"


def _axis_check(value) -> str | None:
    return None if _is_int(value) else "expected one axis (an int)"


def _bool_check(value) -> str | None:
    return None if isinstance(value, bool) else "expected True or False"


def _prim(value: int) -> rx.PrimValue:
    # TVM passes in_group and the like as int64 values (printed as a bare 1 or 0).
    return rx.PrimValue(int64(int(value)))


def _dps_call(name: str, args, out_info) -> rx.Call:
    return rx.Call(rx.Op("relax.call_dps_packed"), (rx.ExternFunc(name), rx.Tuple(tuple(args))),
                   sinfo_args=(out_info,))


def _same_infer(call):
    return tensor_info(call, 0).with_fields(span=None)


# -- allreduce and broadcast: the result is shaped as the input -------------------------------
def _allreduce_legalize(call, context):
    code = rx.ShapeExpr((int64(REDUCE_KINDS.index(call.attrs["op_type"])),))
    return _dps_call("runtime.disco.allreduce", (call.args[0], code, _prim(call.attrs["in_group"])),
                     _same_infer(call))


def _broadcast_legalize(call, context):
    # TVM's broadcast has no in_group attribute and always passes 0 (every worker).
    return _dps_call("runtime.disco.broadcast_from_worker0", (call.args[0], _prim(0)), _same_infer(call))


# -- allgather: axis 0 grows num_workers times -------------------------------------------------
def _allgather_infer(call):
    x = tensor_info(call, 0)
    if x.ndim == 0:
        raise call.error("cannot gather along axis 0 of a tensor of rank 0")
    if x.shape_values is None:
        return x.with_fields(span=None)
    workers = call.attrs["num_workers"]
    first = x.shape_values[0]
    value = static_value(first)
    gathered = int64(value * workers) if value is not None else first * int64(workers)
    return make_tensor_info((gathered, *x.shape_values[1:]), x.dtype)


def _allgather_legalize(call, context):
    return _dps_call("runtime.disco.allgather", (call.args[0], _prim(call.attrs["in_group"])),
                     call.op.infer(call))


# -- scatter: the `axis` dim shrinks num_workers times ----------------------------------------
def _scatter_axis(call, ndim: int) -> int:
    axis = call.attrs["axis"]
    if not -ndim <= axis < ndim:
        raise call.error(f"axis {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim


def _scatter_dims(call):
    """(input dims, axis, workers) of a scatter, its divisibility checked where it is known."""
    x = tensor_info(call, 0)
    if x.shape_values is None:
        # As TVM: the chunk each worker gets must be a known shape to lay the tensor out.
        raise call.error("the tensor to scatter needs a known shape")
    dims = x.shape_values
    axis, workers = _scatter_axis(call, len(dims)), call.attrs["num_workers"]
    size = static_value(dims[axis])
    if size is not None and size % workers:
        raise call.error(f"axis {axis} of a tensor of shape {format_shape(dims)} has size {size}, "
                         f"which is not divisible by num_workers={workers}")
    return dims, axis, workers


def _chunk(dim: tir.PrimExpr, workers: int) -> tir.PrimExpr:
    value = static_value(dim)
    if value is not None:
        return int64(value // workers)
    return dim if workers == 1 else tir.Div(dim, int64(workers))


def _scatter_infer(call):
    dims, axis, workers = _scatter_dims(call)
    out = list(dims)
    out[axis] = _chunk(dims[axis], workers)
    return make_tensor_info(out, tensor_info(call, 0).dtype)


def _scatter_legalize(call, context):
    dims, axis, workers = _scatter_dims(call)
    if static_value(dims[axis]) is None and workers != 1:
        raise call.error(f"cannot show that axis {axis} of size {format_dim(dims[axis])} is divisible by "
                         f"num_workers={workers}: give it a static size")
    # (d0, ..., workers, d_axis / workers, ...): the chunks, then that new axis to the front.
    split = (*dims[:axis], int64(workers), _chunk(dims[axis], workers), *dims[axis + 1:])
    bindings: list[rx.Binding] = []
    source = _bind(call, context, bindings, reshape_legalize, "relax.reshape", (call.args[0], rx.ShapeExpr(split)))
    if axis != 0:
        order = (axis, *range(axis), *range(axis + 1, len(split)))
        source = _bind(call, context, bindings, permute_legalize, "relax.permute_dims", (source,), axes=order)
    scatter = _dps_call("runtime.disco.scatter_from_worker0", (source, _prim(0)), call.op.infer(call))
    return rx.SeqExpr((rx.BindingBlock(tuple(bindings)),), scatter.with_fields(span=call.call.span))


def _bind(call, context, bindings: list, legalize, op_name: str, args, **attrs) -> rx.Var:
    """Legalizes `op_name` on `args` with the project's own legalization (reshape,
    permute_dims) and binds the result to a new variable, named as TVM's block builder
    names one (`lv` in a dataflow block, `gv` outside)."""
    derived = bind_call(rx.Call(rx.Op(op_name), tuple(args), rx.FrozenDict(attrs), span=call.call.span))
    lowered = legalize(derived, context).with_fields(span=call.call.span)
    var = context.local_var("lv" if context.in_dataflow else "gv", lowered.sinfo_args[0])
    bindings.append(rx.VarBinding(var, lowered, span=call.call.span))
    return var


register(OpDef("relax.ccl.allreduce", ("x",),
               (AttrSpec("op_type", "sum", _op_type_check), AttrSpec("in_group", True, _bool_check)),
               _same_infer, "opaque", _allreduce_legalize,
               "reduce (sum, prod, min, max, avg) every worker's tensor, elementwise; all get the result"))
register(OpDef("relax.ccl.allgather", ("x",),
               (AttrSpec("num_workers", check=_workers_check), AttrSpec("in_group", True, _bool_check)),
               _allgather_infer, "opaque", _allgather_legalize,
               "every worker's tensor concatenated along axis 0, on every worker"))
register(OpDef("relax.ccl.broadcast_from_worker0", ("x",), (), _same_infer, "opaque", _broadcast_legalize,
               "worker 0's tensor on every worker"))
register(OpDef("relax.ccl.scatter_from_worker0", ("x",),
               (AttrSpec("num_workers", check=_workers_check), AttrSpec("axis", 0, _axis_check)),
               _scatter_infer, "opaque", _scatter_legalize,
               "worker 0's tensor split evenly along an axis; worker i gets chunk i"))
