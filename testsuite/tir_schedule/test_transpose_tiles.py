"""The transpose rule (schedule/transpose.py): strided copies in 16 x 16 tiles.

Transposes and reshape + transposes are built unscheduled (-O0) and scheduled and
compared with each other and with numpy (exactly: a copy); sizes whose tiled axes are
not multiples of 16 (1, 7, 13, 1023) and symbolic ones keep the plain order.
"""

import numpy as np
import pytest

from relax.ir import tir
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import transpose
from relax.tir.schedule.inline import inline_elementwise
from relax.tir.schedule.nest import match_nest

from dataflow_kernels import lowered_kernels
from test_inline_output_reuse import _run_both


def _nest(params, body):
    (func,) = lowered_kernels(params, body, 2).values()
    (stmt,) = top_level(inline_elementwise(func).body)[0]
    return match_nest(stmt)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64"])
@pytest.mark.parametrize("shape", [(16, 16), (64, 80), (96, 256), (784, 128), (1, 7), (13, 1023), (1023, 64)])
def test_transpose_matches_numpy(shape, dtype, schedule_target):
    funcs = lowered_kernels(f'a: R.Tensor({shape}, "{dtype}")', "out = R.permute_dims(a)", 2)
    (inputs, outputs), = _run_both(funcs, target=schedule_target).values()
    np.testing.assert_array_equal(outputs[-1], inputs[0].T)


def test_attention_key_transpose_matches_numpy(schedule_target):
    body = "out = R.permute_dims(R.reshape(a, R.shape([1, 128, 4, 64])), axes=[0, 2, 3, 1])"
    funcs = lowered_kernels('a: R.Tensor((1, 128, 256), "float32")', body, 2)
    (inputs, outputs), = _run_both(funcs, target=schedule_target).values()
    np.testing.assert_array_equal(outputs[-1], inputs[0].reshape(1, 128, 4, 64).transpose(0, 2, 3, 1))


def test_three_axis_permutation_matches_numpy(schedule_target):
    funcs = lowered_kernels('a: R.Tensor((32, 3, 80), "float32")', "out = R.permute_dims(a, axes=[1, 2, 0])", 2)
    (inputs, outputs), = _run_both(funcs, target=schedule_target).values()
    np.testing.assert_array_equal(outputs[-1], inputs[0].transpose(1, 2, 0))


def test_symbolic_transpose_matches_numpy(schedule_target):
    funcs = lowered_kernels('a: R.Tensor(("n", 64), "float32")', "out = R.permute_dims(a)", 2)
    for n in (1, 16, 1023):
        (inputs, outputs), = _run_both(funcs, {"n": n}, target=schedule_target).values()
        np.testing.assert_array_equal(outputs[-1], inputs[0].T)


def test_rule_tiles_the_two_axes():
    nest = _nest('a: R.Tensor((1, 128, 256), "float32")',
                 "out = R.permute_dims(R.reshape(a, R.shape([1, 128, 4, 64])), axes=[0, 2, 3, 1])")
    assert transpose.matches(nest)
    loops = [(lp.loop_var.name, lp.extent.value) for lp in collect(transpose.apply(nest), tir.For)]
    assert [extent for name, extent in loops if name.endswith("_in")] == [16, 16]
    assert sorted(extent for name, extent in loops if name.endswith("_tile")) == [4, 8]


@pytest.mark.parametrize("params,body", [
    ('a: R.Tensor((64, 48), "float32"), b: R.Tensor((64, 48), "float32")', "out = R.add(a, b)"),  # contiguous
    ('a: R.Tensor((1023, 64), "float32")', "out = R.permute_dims(a)"),  # 1023 is not a multiple of 16
    ('a: R.Tensor(("n", 64), "float32")', "out = R.permute_dims(a)"),  # symbolic
    ('a: R.Tensor((128, 4, 64), "float32")', "out = R.permute_dims(a, axes=[1, 0, 2])"),  # rows stay contiguous
])
def test_rule_leaves_other_copies(params, body):
    nest = _nest(params, body)
    assert nest is not None and not transpose.matches(nest)


_IN_PLACE = """
@I.ir_module
class Module:
    @T.prim_func
    def kernel(a: T.Buffer((64, 64), "float32")):
        for i, j in T.grid(64, 64):
            with T.block("t"):
                vi, vj = T.axis.remap("SS", [i, j])
                a[vi, vj] = a[vj, vi]
"""


def test_in_place_permutation_keeps_its_order(schedule_target):
    from relax.script import parse

    (func,) = parse(_IN_PLACE).prim_funcs().values()
    (stmt,) = top_level(func.body)[0]
    assert not transpose.matches(match_nest(stmt))
    (inputs, outputs), = _run_both({"kernel": func}, target=schedule_target).values()
    expected = inputs[0].copy()
    for i in range(64):
        for j in range(64):
            expected[i, j] = expected[j, i]
    np.testing.assert_array_equal(outputs[0], expected)


@pytest.mark.parametrize("level,lanes", [("x86-64", 4), ("x86-64-v3", 8), ("x86-64-v4", 16)])
def test_tiles_are_transposed_in_registers_in_blocks_of_a_vector(level, lanes):
    """With the CPU model: vector loads of the block's rows, log2(lanes) rounds of
    two-vector shuffles, vector stores; no element-by-element loop is left."""
    from relax.tir.schedule.cpu import CpuInfo

    nest = _nest('a: R.Tensor((1, 128, 256), "float32")',
                 "out = R.permute_dims(R.reshape(a, R.shape([1, 128, 4, 64])), axes=[0, 2, 3, 1])")
    scheduled = transpose.apply(nest, CpuInfo.for_level(level))
    shuffles = collect(scheduled, tir.Shuffle)
    assert len(shuffles) == lanes * (lanes.bit_length() - 1)
    assert all(len(shuffle.vectors) == 2 for shuffle in shuffles)
    stores = collect(scheduled, tir.BufferStore)
    assert len(stores) == lanes and all(isinstance(store.indices[-1], tir.Ramp) for store in stores)
    blocks = [lp.extent.value for lp in collect(scheduled, tir.For) if lp.loop_var.name.endswith("_block")]
    assert blocks == [16 // lanes, 16 // lanes]
