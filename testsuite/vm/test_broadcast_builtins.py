"""vm.builtin.broadcast_shape / broadcast_plan / flatten (vm/machine/broadcast.py): a plan,
replayed as the broadcast kernels read it, gives numpy's result (exact: one addition per element)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relax.runtime.errors import VMError
from relax.vm.machine.broadcast import broadcast_plan, broadcast_shape, flatten

RANK = 4


def _replay(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """lhs + rhs computed as a broadcast kernel does: a RANK-deep loop nest over the
    plan's sizes, each flat operand read at the dot product of the indices and its strides."""
    plan = broadcast_plan(lhs.shape, rhs.shape, RANK, "R.add")
    sizes, lhs_strides, rhs_strides = plan[:RANK], plan[RANK:2 * RANK], plan[2 * RANK:]
    lhs_flat, rhs_flat = flatten(lhs), flatten(rhs)
    out = np.empty(sizes, lhs.dtype)
    for index in itertools.product(*(range(size) for size in sizes)):
        out[index] = (lhs_flat[np.dot(index, lhs_strides)] + rhs_flat[np.dot(index, rhs_strides)])
    return out.reshape(broadcast_shape(lhs.shape, rhs.shape, "R.add"))


@pytest.mark.parametrize("lhs_shape, rhs_shape", [
    ((2, 3), (3,)), ((), ()), ((), (3,)), ((0, 3), (3,)), ((5, 1, 1, 3), (4, 3)), ((3, 1), (1, 3)),
])
def test_plan_replays_numpy_broadcasting(lhs_shape, rhs_shape):
    rng = np.random.default_rng(0)
    lhs = np.asarray(rng.integers(0, 9, lhs_shape), "float32")
    rhs = np.asarray(rng.integers(0, 9, rhs_shape), "float32")
    np.testing.assert_array_equal(_replay(lhs, rhs), lhs + rhs)


def test_same_shapes_merge_into_one_flat_loop():
    assert broadcast_plan((2, 3, 4), (2, 3, 4), RANK) == (1, 1, 1, 24, 0, 0, 0, 1, 0, 0, 0, 1)


def test_shapes_that_do_not_broadcast_name_the_operator():
    with pytest.raises(VMError, match=r"^cannot broadcast \(2, 3\) with \(4,\) in R.add$"):
        broadcast_shape((2, 3), (4,), "R.add")


def test_a_plan_deeper_than_the_kernel_is_refused():
    with pytest.raises(VMError, match="needs 5 dimensions after merging, more than the 4 its kernel has"):
        broadcast_plan((2, 1, 2, 1, 2), (1, 2, 1, 2, 1), RANK, "R.add")
