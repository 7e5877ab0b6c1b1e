"""How a sharding flows through one operator, for propagate-sharding.

A layout is one entry per mesh axis; each mesh axis is handled on its own. An entry is
None (not known yet), "R" (replicated over that mesh axis) or an int i (split along
tensor axis i: placement S[i]). A rule sees the entries of an operator's tensor
inputs and of its result and returns what follows from them: the result's entry
(forward) and the inputs' entries (backward), None where nothing follows.

    elementwise (relu, exp, ...)   the result is laid out as the input, and back
    broadcast (add, multiply, ...) axes matched from the right; an input axis of size 1
                                   (or missing) is replicated
    matmul x(.., m, k) @ w(k, n)   S on m or n carries to the result; S[k] on both is a
                                   partial sum, whose result is replicated once the
                                   lowering adds the allreduce (matmul_contracts)
    permute_dims(x, axes)          the split axis follows the permutation
    sum / max / min / mean         a kept split axis stays split (re-indexed without
                                   keepdims); a reduced one gives a partial result,
                                   replicated once the lowering adds the allreduce
                                   (partial_reduction: sum, max, min; avg for mean)
    softmax / log_softmax          a split off the normalized axis is kept; a split on it
                                   is an error (each device would see part of a row)

An operator without a rule accepts replicated inputs only (every device computes all
of it); a sharded input there is an error that names the operator. Conflicting inputs
(two different splits meeting, or a split meeting a contraction the other side does
not share) are errors too: TVM would insert a redistribute, which the lowering here
does not implement.
"""

from __future__ import annotations

from functools import partial

from ..ir.dtensor import ShardingError


def _dims(info) -> tuple:
    values = info.shape_values
    return tuple(getattr(v, "value", None) for v in values) if values is not None else None


def elementwise_rule(entries, out, infos, out_info):
    known = next((e for e in (*entries, out) if e is not None), None)
    return known, [known]


def _broadcast_map(in_info, out_info):
    """out axis -> the input axis it reads, for the axes where the input is not broadcast."""
    ins, outs = _dims(in_info), _dims(out_info)
    if ins is None or outs is None:
        raise ShardingError("a sharded broadcast needs static shapes")
    offset = len(outs) - len(ins)
    return {a + offset: a for a in range(len(ins)) if ins[a] == outs[a + offset] and ins[a] != 1}


def broadcast_rule(entries, out, infos, out_info):
    maps = [_broadcast_map(info, out_info) for info in infos]
    candidates = set()
    for entry, mapping in zip(entries, maps):
        if isinstance(entry, int):
            inverse = {v: k for k, v in mapping.items()}
            candidates.add(inverse.get(entry, "bad"))
    if "bad" in candidates or len(candidates) > 1:
        raise ShardingError("its inputs are split along different axes")
    if candidates:
        result = candidates.pop()
    elif all(e == "R" for e in entries):
        result = "R"
    else:
        result = out
    if isinstance(out, int) and result not in (None, out) or out == "R" and isinstance(result, int):
        raise ShardingError("its result is laid out otherwise than its inputs")
    result = out if result is None else result
    backward = [_backward_broadcast(result, mapping) for mapping in maps]
    return result, backward


def _backward_broadcast(result, mapping):
    if result is None:
        return None
    if result == "R":
        return "R"
    return mapping.get(result, "R")


def _matmul_axes(infos):
    nx, nw = infos[0].ndim, infos[1].ndim
    if nx < 2 or nw != 2:
        raise ShardingError("a sharded matmul takes x of rank >= 2 and a weight of rank 2")
    return nx - 2, nx - 1  # x's row and contracted axes; the result's rows and columns match


def matmul_rule(entries, out, infos, out_info):
    m_axis, k_axis = _matmul_axes(infos)
    x, w = entries
    if (x == k_axis) != (w == 0) and None not in (x, w):
        raise ShardingError("one side of the contraction is split and the other is not")
    if x == k_axis and w is None:
        return "R", [x, 0]
    if w == 0 and x is None:
        return "R", [k_axis, w]
    if x == k_axis:
        return "R", [x, w]  # partial sums: replicated after the allreduce
    if isinstance(x, int) and isinstance(w, int):
        raise ShardingError("both x and the weight are split outside the contraction")
    if isinstance(x, int):
        return x, [x, "R" if w is None else w]
    if w == 1:
        return k_axis, [x if x is not None else "R", w]
    if x == "R" and w == "R":
        return "R", [x, w]
    return out, [x, w]


def matmul_contracts(entries, infos) -> bool:
    """Whether a matmul with these (final) entries computes partial sums on that mesh axis."""
    return entries[0] == _matmul_axes(infos)[1] and entries[1] == 0


def replicated_rule(entries, out, infos, out_info):
    if any(isinstance(e, int) for e in (*entries, out)):
        raise ShardingError("no sharding rule for this operator: its inputs must be replicated")
    known = "R" if all(e == "R" for e in entries) else None
    return known, ["R" if known else e for e in entries]


def _permutation(axes, ndim: int) -> list[int]:
    """Output axis i reads input axis order[i] (reversed when axes is None)."""
    return [a % ndim for a in axes] if axes is not None else list(reversed(range(ndim)))


def permute_rule(axes, entries, out, infos, out_info):
    order = _permutation(axes, infos[0].ndim)
    x = entries[0]
    forward = order.index(x) if isinstance(x, int) else x
    backward = order[out] if isinstance(out, int) else out
    if None not in (forward, out) and forward != out:
        raise ShardingError("its result is laid out otherwise than its input")
    return (out if forward is None else forward), [backward if x is None else x]


def _reduced_axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(a % ndim for a in ((axis,) if isinstance(axis, int) else axis)))


def _kept_map(attrs, ndim: int) -> dict[int, int]:
    """input axis -> result axis, for the axes a reduction keeps."""
    axes = _reduced_axes(attrs.get("axis"), ndim)
    if attrs.get("keepdims", False):
        return {a: a for a in range(ndim) if a not in axes}
    kept = [a for a in range(ndim) if a not in axes]
    return {a: i for i, a in enumerate(kept)}


def reduce_rule(attrs, entries, out, infos, out_info):
    kept = _kept_map(attrs, infos[0].ndim)
    x = entries[0]
    if isinstance(x, int):
        forward = kept.get(x, "R")  # a reduced split axis: partial results, replicated after the allreduce
    else:
        forward = x
    if isinstance(out, int) and forward not in (None, out) or out == "R" and isinstance(forward, int):
        raise ShardingError("its result is laid out otherwise than its input")
    if x is None and isinstance(out, int):
        x = {v: k for k, v in kept.items()}.get(out)
        if x is None:
            raise ShardingError(f"its result is split along axis {out}, which it reduces")
    return (out if forward is None else forward), [x]


REDUCE_KINDS = {"relax.sum": "sum", "relax.max": "max", "relax.min": "min", "relax.mean": "avg"}


def partial_reduction(op_name: str, attrs, entries, infos) -> str | None:
    """The allreduce kind completing a reduction over a split axis with these (final)
    entries, or None. A mean of equal parts is the average of their means (splits are even)."""
    if op_name not in REDUCE_KINDS or not isinstance(entries[0], int):
        return None
    return None if entries[0] in _kept_map(attrs, infos[0].ndim) else REDUCE_KINDS[op_name]


def softmax_rule(axis, entries, out, infos, out_info):
    normalized = axis % infos[0].ndim
    if normalized in (entries[0], out):
        raise ShardingError(f"it normalizes over axis {normalized}, which is split")
    return elementwise_rule(entries, out, infos, out_info)


def rule_for(op, attrs=None) -> object:
    """The rule of a registered operator (op/registry.py's OpDef) called with `attrs`."""
    attrs = attrs or {}
    if op.name == "relax.matmul":
        return matmul_rule
    if op.name == "relax.permute_dims":
        return partial(permute_rule, attrs.get("axes"))
    if op.name in REDUCE_KINDS:
        return partial(reduce_rule, attrs)
    if op.name in ("relax.nn.softmax", "relax.nn.log_softmax"):
        return partial(softmax_rule, attrs.get("axis", -1))
    if op.pattern == "elementwise" and len(op.args) == 1:
        return elementwise_rule
    if op.pattern == "broadcast" and len(op.args) == 2:
        return broadcast_rule
    return replicated_rule
