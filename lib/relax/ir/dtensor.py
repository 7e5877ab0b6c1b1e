"""Distributed tensors (TVM's relax.distributed): device meshes, placements and DTensor
struct info.

A module that is sharded at compile time names its device meshes in its global infos,
as TVM 0.27 prints them:

    I.module_global_infos({"mesh": [R.device_mesh((2,), I.Range(0, 2))]})

and a value laid out over a mesh has DTensor struct info: its *global* shape and dtype,
the mesh it lives on (`"mesh[0]"`, an index into that list) and one placement per mesh
axis, `R` (every device holds the whole tensor) or `S[i]` (the tensor is split evenly
along its axis i over that mesh axis):

    R.DTensor((8, 16), "float32", "mesh[0]", "S[1]")       (2 devices: each holds 8 x 8)
    R.DTensor((8, 16), "float32", "mesh[1]", "S[1], R")    (a 2 x 2 mesh)

DTensorStructInfo is a TensorStructInfo (the global view): every operator's inference
reads it as the tensor it stands for, which is what sharding propagation needs.
"""

from __future__ import annotations

import re

from .node import FrozenDict, node
from .struct_info import TensorStructInfo

_MESH_REF = re.compile(r"^(\w+)\[(\d+)\]$")
_SHARD = re.compile(r"^S\[(\d+)\]$")


class ShardingError(ValueError):
    """A placement, mesh reference or sharding that cannot be used (the message says why)."""


@node
class DTensorStructInfo(TensorStructInfo):
    device_mesh: str = "mesh[0]"
    placement: tuple[str, ...] = ("R",)


def parse_placement(text: str) -> tuple[str, ...]:
    """`"S[1], R"` as ("S[1]", "R"): one entry per mesh axis, each R or S[axis]."""
    items = tuple(item.strip() for item in text.split(","))
    for item in items:
        if item != "R" and not _SHARD.match(item):
            raise ShardingError(f"bad placement '{text}': each entry is R or S[axis], got '{item}'")
    return items


def placement_text(placement: tuple[str, ...]) -> str:
    return ", ".join(placement)


def shard_axis(entry: str) -> int | None:
    """The tensor axis an `S[i]` entry splits, None for `R`."""
    found = _SHARD.match(entry)
    return int(found.group(1)) if found else None


def device_mesh(shape: tuple[int, ...], first: int, end: int) -> FrozenDict:
    """A mesh global info: its shape and the range of device ids it covers."""
    if any(not isinstance(d, int) or d <= 0 for d in shape) or not shape:
        raise ShardingError(f"a device mesh shape is positive sizes, got {shape}")
    count = 1
    for d in shape:
        count *= d
    if end - first != count:
        raise ShardingError(f"a device mesh of shape {shape} needs {count} devices, "
                            f"the range {first}..{end} has {end - first}")
    return FrozenDict({"kind": "device_mesh", "shape": tuple(shape), "device_range": (first, end)})


def resolve_mesh(global_infos, reference: str) -> FrozenDict:
    """The mesh a `"mesh[0]"` reference names in a module's global infos."""
    found = _MESH_REF.match(reference)
    if found is None:
        raise ShardingError(f"bad device mesh '{reference}': expected a reference such as \"mesh[0]\"")
    key, index = found.group(1), int(found.group(2))
    meshes = global_infos.get(key) if global_infos else None
    if not meshes:
        raise ShardingError(f"device mesh '{reference}': the module has no global info '{key}' "
                            f"(I.module_global_infos({{\"{key}\": [R.device_mesh((2,), I.Range(0, 2))]}}))")
    if index >= len(meshes):
        raise ShardingError(f"device mesh '{reference}': the module has {len(meshes)} mesh(es) under '{key}'")
    mesh = meshes[index]
    if not isinstance(mesh, FrozenDict) or mesh.get("kind") != "device_mesh":
        raise ShardingError(f"'{reference}' is not a device mesh")
    return mesh


def has_device_mesh(mod) -> bool:
    return any(isinstance(item, FrozenDict) and item.get("kind") == "device_mesh"
               for value in mod.global_infos.values() if isinstance(value, (tuple, list)) for item in value)


def check_placement(placement: tuple[str, ...], mesh: FrozenDict, ndim: int, reference: str) -> None:
    """A placement fits its mesh (one entry per mesh axis) and its tensor (axes in range)."""
    if len(placement) != len(mesh["shape"]):
        raise ShardingError(f"placement '{placement_text(placement)}' has {len(placement)} entries, "
                            f"mesh '{reference}' has {len(mesh['shape'])} axes")
    for entry in placement:
        axis = shard_axis(entry)
        if axis is not None and ndim >= 0 and axis >= ndim:
            raise ShardingError(f"placement '{entry}' splits axis {axis} of a tensor of rank {ndim}")


def local_shape(dims: tuple[int, ...], mesh: FrozenDict, placement: tuple[str, ...]) -> tuple[int, ...]:
    """The shape each device holds: every S[i] divides axis i by its mesh axis' size."""
    out = list(dims)
    for size, entry in zip(mesh["shape"], placement):
        axis = shard_axis(entry)
        if axis is None:
            continue
        if out[axis] % size:
            raise ShardingError(f"axis {axis} of size {out[axis]} does not split evenly over {size} devices")
        out[axis] //= size
    return tuple(out)


def same_layout(a: TensorStructInfo, b: TensorStructInfo) -> bool:
    """Whether two tensor struct infos of the same type lie on the same mesh the same way."""
    if not isinstance(a, DTensorStructInfo):
        return True
    return a.device_mesh == b.device_mesh and a.placement == b.placement
