"""Tensor manipulation: reshape, permute_dims, broadcast_to, expand_dims, squeeze,
flatten, concat, stack, split, strided_slice, take, tile, repeat, flip, layout_transform.

All are injective: every output element is one input element, found by index
arithmetic (reshape goes through the row-major flat offset). This module is the
family's table: one row per operator, its signature, inference, legalization and
one-line description. The inference and legalization live by responsibility in
reshape.py (same elements, new shape or axis order), concat_split.py (joining and
splitting) and slicing.py (slicing, gathering, repeating, reversing).
"""

from __future__ import annotations

from .concat_split import concat_infer, concat_legalize, split_infer, split_legalize, stack_infer, stack_legalize
from .registry import AttrSpec, OpDef, register
from .reshape import (
    broadcast_to_infer, broadcast_to_legalize, expand_dims_dims, flatten_dims, layout_infer, layout_transform_infer,
    layout_transform_legalize, permute_infer, permute_legalize, reshape_infer, reshape_legalize, reshape_like_legalize,
    squeeze_dims,
)
from .slicing import (
    flip_infer, flip_legalize, repeat_dims, repeat_legalize, strided_slice_infer, strided_slice_legalize, take_infer,
    take_legalize, tile_dims, tile_legalize,
)


def _register(name, args, attrs, infer, legalize, doc, pattern="injective"):
    register(OpDef(f"relax.{name}", args, attrs, infer, pattern, legalize, doc))


_register("reshape", ("x", "shape"), (), reshape_infer, reshape_legalize,
          "the same elements in a new shape (one dimension may be -1)")
_register("permute_dims", ("x",), (AttrSpec("axes", None),), permute_infer, permute_legalize,
          "transpose: output axis i is input axis axes[i] (reversed when axes is None)")
_register("broadcast_to", ("x", "shape"), (), broadcast_to_infer, broadcast_to_legalize,
          "broadcast to a shape with numpy rules", pattern="broadcast")
_register("expand_dims", ("x",), (AttrSpec("axis"),), layout_infer(expand_dims_dims),
          reshape_like_legalize("expand_dims", expand_dims_dims), "insert size-1 axes at the given positions")
_register("squeeze", ("x",), (AttrSpec("axis", None),), layout_infer(squeeze_dims),
          reshape_like_legalize("squeeze", squeeze_dims), "remove size-1 axes (all of them when axis is None)")
_register("flatten", ("x",), (), layout_infer(flatten_dims), reshape_like_legalize("flatten", flatten_dims),
          "all elements in one dimension")
_register("concat", ("tensors",), (AttrSpec("axis", 0),), concat_infer, concat_legalize,
          "join a tuple of tensors along an axis")
_register("stack", ("tensors",), (AttrSpec("axis", 0),), stack_infer, stack_legalize,
          "join a tuple of equal-shaped tensors along a new axis")
_register("split", ("x",), (AttrSpec("indices_or_sections"), AttrSpec("axis", 0)), split_infer, split_legalize,
          "split into equal sections, or at indices; gives a tuple")
_register("strided_slice", ("x", "axes", "begin", "end", "*strides"), (AttrSpec("assume_inbound", False),),
          strided_slice_infer, strided_slice_legalize, "slice begin:end:stride along the given axes")
_register("take", ("x", "indices"), (AttrSpec("axis", None), AttrSpec("mode", "fast")), take_infer, take_legalize,
          "gather elements along an axis (flattened when axis is None)")
_register("tile", ("x",), (AttrSpec("repeats"),), layout_infer(tile_dims), tile_legalize,
          "repeat the whole tensor along each axis")
_register("repeat", ("x",), (AttrSpec("repeats"), AttrSpec("axis", None)), layout_infer(repeat_dims),
          repeat_legalize, "repeat each element")
_register("flip", ("x",), (AttrSpec("axis"),), flip_infer, flip_legalize, "reverse the order along an axis")
_register("layout_transform", ("x",),
          (AttrSpec("index_map"), AttrSpec("pad_value", None), AttrSpec("axis_separators", None),
           AttrSpec("input_axis_separators", None)),
          layout_transform_infer, layout_transform_legalize,
          "move elements to where an index map sends them (permutations are legalized)")
