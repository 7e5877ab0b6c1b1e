"""Sharding annotations (TVM's relax.distributed): R.dist.annotate_sharding and
R.dist.redistribute.

    w1a: R.Tensor((8, 16), dtype="float32") = R.dist.annotate_sharding(w1, device_mesh="mesh[0]", placement="S[1]")
    y: R.DTensor((4, 8), "float32", "mesh[0]", "S[0]") = R.dist.redistribute(x, device_mesh="mesh[0]", placement="S[0]")

annotate_sharding is a hint for sharding propagation (transform/propagate_sharding.py):
its value is its input, unchanged, as TVM infers it; the pass removes it. redistribute
states a layout change of a distributed tensor: its result is the same global tensor on
`device_mesh` laid out by `placement`. Both refer to a mesh of the module's global infos
(ir/dtensor.py), which the passes check, since inference does not see the module.
"""

from __future__ import annotations

from ..ir.dtensor import DTensorStructInfo, ShardingError, parse_placement
from .registry import AttrSpec, OpDef, register
from .shape import tensor_info


def _placement_check(value) -> str | None:
    if not isinstance(value, str):
        return "expected a placement string such as \"S[1]\" or \"R\""
    try:
        parse_placement(value)
    except ShardingError as error:
        return str(error)
    return None


def _mesh_check(value) -> str | None:
    if isinstance(value, str) and value.endswith("]") and "[" in value:
        return None
    return "expected a device mesh reference such as \"mesh[0]\""


_ATTRS = (AttrSpec("device_mesh", check=_mesh_check), AttrSpec("placement", check=_placement_check))


def _annotate_infer(call):
    return tensor_info(call, 0).with_fields(span=None)


def _annotate_legalize(call, context):
    # Without the sharding passes the program runs whole on every worker: the hint is moot.
    return call.args[0]


def _redistribute_infer(call):
    x = tensor_info(call, 0)
    return DTensorStructInfo(x.shape, x.dtype, x.ndim, None, call.attrs["device_mesh"],
                             parse_placement(call.attrs["placement"]))


register(OpDef("relax.dist.annotate_sharding", ("input",), _ATTRS, _annotate_infer, "opaque", _annotate_legalize,
               "a sharding hint for propagate-sharding: the tensor laid out on a device mesh"))
register(OpDef("relax.dist.redistribute", ("input",), _ATTRS, _redistribute_infer, "opaque", None,
               "the same global tensor laid out by another placement on a device mesh"))
