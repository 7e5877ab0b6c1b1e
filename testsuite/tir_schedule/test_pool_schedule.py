"""The pool schedule rule (relax.tir.schedule.pool): scheduled max_pool2d kernels compute what the plain nests do.

Each case legalizes (-O2) an NCHW max_pool2d, builds it unscheduled (-O0) and
scheduled, runs both on the same random data and checks they agree exactly (max is
exact and the rule keeps each output's terms) and match a numpy max pool. Output
widths of 1..1022 cover whole vectors of 16 and 8 and leftover columns; padding keeps
the guarded nest (no vector rows).
"""

import numpy as np
import pytest

from relax.build import lower
from relax.codegen.build_kernels import build_host_library
from relax.ir import tir
from relax.script import parse
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import pool
from relax.tir.schedule.cpu import CpuInfo
from relax.tir.schedule.nest import match_nest
from relax.ir.pass_infra import PassContext

# (input shape, window, stride, padding)
CASES = [
    ((1, 16, 32, 32), 2, 2, 0),  # the CNN's first pool
    ((1, 32, 16, 16), 2, 2, 0),  # the CNN's second pool: rows of 8
    ((1, 3, 7, 7), 2, 2, 0),  # rows of 3: no whole vector
    ((1, 2, 13, 13), 3, 1, 0),  # stride 1, rows of 11: a vector of 8 and 3 left over
    ((2, 3, 35, 35), 3, 2, 0),  # window wider than the stride, rows of 17
    ((1, 1, 4, 1023), 2, 1, 0),  # rows of 1022
    ((1, 1, 1, 1), 1, 1, 0),
    ((1, 4, 17, 17), 3, 2, 1),  # padding: the test stays
]


def _pool_func(shape, window, stride, pad):
    text = f"""
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor({shape}, "float32")):
        with R.dataflow():
            out = R.nn.max_pool2d(x, pool_size=[{window}, {window}], strides=[{stride}, {stride}],
                                  padding=[{pad}, {pad}, {pad}, {pad}])
            R.output(out)
        return out
"""
    funcs = lower(parse(text), 2).prim_funcs()
    assert len(funcs) == 1
    return funcs


def _reference(x, window, stride, pad):
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    height = (padded.shape[2] - window) // stride + 1
    width = (padded.shape[3] - window) // stride + 1
    out = np.full(x.shape[:2] + (height, width), -np.inf, dtype=x.dtype)
    for ry in range(window):
        for rx in range(window):
            out = np.maximum(out, padded[:, :, ry::stride, rx::stride][:, :, :height, :width])
    return out


@pytest.mark.parametrize("shape,window,stride,pad", CASES)
def test_max_pool_matches_plain_nest_and_numpy(shape, window, stride, pad, schedule_target):
    funcs = _pool_func(shape, window, stride, pad)
    (name, func), = funcs.items()
    with PassContext(opt_level=0):
        plain = build_host_library(funcs)
    scheduled = build_host_library(funcs, schedule_target)
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype("float32")
    out_shape = tuple(d.value for d in func.buffer_map[-1][1].shape)
    outputs = []
    for library in (plain, scheduled):
        out = np.zeros(out_shape, "float32")
        library.get_function(name)(x, out)
        outputs.append(out)
    np.testing.assert_array_equal(outputs[0], outputs[1])
    np.testing.assert_array_equal(outputs[1], _reference(x, window, stride, pad))


def _nest(funcs):
    (func,) = funcs.values()
    (stmt,) = top_level(func.body)[0]
    return match_nest(stmt)


AVX512 = CpuInfo.for_level("x86-64-v4")


def test_cnn_pool_reads_whole_vectors_and_shuffles():
    nest = _nest(_pool_func((1, 16, 32, 32), 2, 2, 0))
    assert pool.matches(nest, AVX512)
    stmt = pool.apply(nest, AVX512)
    assert not [c for c in collect(stmt, tir.Call) if c.op == "tir.if_then_else"]
    shuffles = collect(stmt, tir.Shuffle)
    assert shuffles and all(s.dtype == "float32x16" for s in shuffles)
    # elements 0, 2, .., 30 of the 31-element span, read as vectors at offsets 0 and 15
    assert [i.value for i in shuffles[0].indices] == [0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31]
    loads = collect(stmt, tir.Ramp)
    assert all(ramp.lanes == 16 for ramp in loads)  # no read past the last picked element


@pytest.mark.parametrize("level, lanes", [("x86-64-v3", 8), ("x86-64-v2", 4)])
def test_pool_vectors_follow_the_cpu_model(level, lanes):
    stmt = pool.apply(_nest(_pool_func((1, 16, 32, 32), 2, 2, 0)), CpuInfo.for_level(level))
    assert {s.dtype for s in collect(stmt, tir.Shuffle)} == {f"float32x{lanes}"}


def test_padded_pool_keeps_its_test():
    nest = _nest(_pool_func((1, 4, 17, 17), 3, 2, 1))
    term = pool._guarded_term(nest)
    assert term is not None
    assert not pool.always_true(term.args[0], pool._env(nest))
    if pool.matches(nest, AVX512):
        assert [c for c in collect(pool.apply(nest, AVX512), tir.Call) if c.op == "tir.if_then_else"]


def test_max_over_every_axis_is_not_a_pool():
    # A max to a 0-d result has no output row: the rule must say no, not fail (it raised
    # IndexError on the reductions sample at -O2).
    from dataflow_kernels import lowered_kernels

    for name, func in lowered_kernels('x: R.Tensor((4, 37), "float32")', "out = R.max(x)", 2).items():
        lib = build_host_library({name: func})
        x = np.random.default_rng(0).standard_normal((4, 37)).astype(np.float32)
        out = np.zeros((), dtype=np.float32)
        lib.get_function(name)(x, out)
        assert out == x.max()
