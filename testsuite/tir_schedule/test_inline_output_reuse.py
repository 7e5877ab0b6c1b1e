"""Elementwise inlining (schedule/inline.py) and output reuse (schedule/output_reuse.py).

Small models are built whole (relax.build) at -O0 (plain nests, no fusion) and -O2
(fused, scheduled), run by the VM on the same random data and compared with each
other and with numpy on odd sizes (1, 7, 13, 1023) and symbolic ones; hand-written
kernels are built unscheduled and scheduled and compared the same way. Tolerance:
rtol 1e-4, atol 1e-4 for float32 (the same operations per element; sums of up to 1023
terms round differently once fused into multiply-adds or vectorized), exact for
integers. Structural tests check what is inlined and what is not.
"""

import math

import numpy as np
import pytest

import relax
from relax.codegen.build_kernels import build_host_library
from relax.ir import tir
from relax.script import parse
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import default_cpu_schedule
from relax.tir.schedule.inline import inline_elementwise
from relax.tir.schedule.output_reuse import reuse_output
from relax.ir.pass_infra import PassContext

from dataflow_kernels import lowered_kernels, module_text

TOLERANCE = dict(rtol=1e-4, atol=1e-4)
_erf = np.vectorize(math.erf)


def _arrays(func, sizes: dict, rng):
    arrays = []
    for _, buffer in func.buffer_map:
        shape = tuple(d.value if isinstance(d, tir.IntImm) else sizes[d.name] for d in buffer.shape)
        if buffer.dtype.startswith("int"):
            arrays.append(rng.integers(-50, 50, shape).astype(buffer.dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(buffer.dtype))
    return arrays


def _run_both(funcs: dict, sizes=None, target=None):
    """{kernel: (inputs, scheduled outputs)} after checking the scheduled build agrees with -O0."""
    with PassContext(opt_level=0):
        plain = build_host_library(funcs)
    scheduled = build_host_library(funcs, target)
    results = {}
    for name, func in funcs.items():
        inputs = _arrays(func, sizes or {}, np.random.default_rng(7))
        a, b = [x.copy() for x in inputs], [x.copy() for x in inputs]
        plain.get_function(name)(*a)
        scheduled.get_function(name)(*b)
        for x, y in zip(a, b):
            if x.dtype.kind == "f":
                np.testing.assert_allclose(x, y, **TOLERANCE)
            else:
                np.testing.assert_array_equal(x, y)
        results[name] = (inputs, b)
    return results


def _run_model(params: str, body: str, *inputs):
    """main's result at -O2, after checking it agrees with -O0's."""
    mod = parse(module_text(params, body))
    results = []
    for level in (0, 2):
        vm = relax.VirtualMachine(relax.build(mod, "llvm", opt_level=level), "cpu")
        results.append(np.asarray(vm["main"](*inputs)))
    if results[0].dtype.kind == "f":
        np.testing.assert_allclose(results[0], results[1], **TOLERANCE)
    else:
        np.testing.assert_array_equal(results[0], results[1])
    return results[1]


def _only(results):
    (inputs, outputs), = results.values()
    return inputs, outputs


_GELU_BODY = ('y = R.add(b, R.matmul(x, w))\n'
              '            e = R.erf(R.divide(y, R.const(1.4142135381698608, "DT")))\n'
              '            out = R.multiply(R.multiply(y, R.add(e, R.const(1.0, "DT"))), R.const(0.5, "DT"))')


def _gelu_params(m, k, n, dtype="float32"):
    return f'x: R.Tensor(({m}, {k}), "{dtype}"), w: R.Tensor(({k}, {n}), "{dtype}"), b: R.Tensor(({n},), "{dtype}")'


def _gelu_module(m, k, n, dtype="float32"):
    return lowered_kernels(_gelu_params(m, k, n, dtype), _GELU_BODY.replace("DT", dtype), 2)


def _random(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _gelu(y):
    return y * (_erf(y / 1.4142135381698608) + 1) * 0.5  # the model's constant: sqrt(2) in float32


@pytest.mark.parametrize("m,k,n", [(1, 7, 13), (7, 13, 1), (13, 1, 7), (1023, 13, 33), (5, 1023, 64), (128, 256, 1024)])
def test_matmul_gelu_epilogue_matches_numpy(m, k, n, schedule_target):
    x, w, b = _random((m, k)), _random((k, n), seed=1), _random((n,), seed=2)
    out = _run_model(_gelu_params(m, k, n), _GELU_BODY.replace("DT", "float32"), x, w, b)
    np.testing.assert_allclose(out, _gelu(x.astype(np.float64) @ w + b), rtol=1e-4, atol=1e-4)
    _run_both(_gelu_module(m, k, n), target=schedule_target)  # the fused kernel alone, scheduled vs unscheduled


def test_matmul_gelu_epilogue_float64():
    x, w, b = _random((13, 7), "float64"), _random((7, 33), "float64", 1), _random((33,), "float64", 2)
    out = _run_model(_gelu_params(13, 7, 33, "float64"), _GELU_BODY.replace("DT", "float64"), x, w, b)
    np.testing.assert_allclose(out, _gelu(x @ w + b), rtol=1e-10, atol=1e-10)


def test_symbolic_gelu_epilogue_matches_numpy():
    params = 'x: R.Tensor(("n", 13), "float32"), w: R.Tensor((13, 7), "float32")'
    body = 'y = R.matmul(x, w)\n            out = R.multiply(y, R.add(R.erf(y), R.const(1.0, "float32")))'
    for n in (1, 7, 1023):
        x, w = _random((n, 13)), _random((13, 7), seed=1)
        y = x.astype(np.float64) @ w
        np.testing.assert_allclose(_run_model(params, body, x, w), y * (_erf(y) + 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("shape", [(1,), (7, 13), (13, 1023)])
def test_elementwise_chain_matches_numpy(dtype, shape, schedule_target):
    params = f'a: R.Tensor({shape}, "{dtype}"), b: R.Tensor({shape}, "{dtype}")'
    body = "t = R.add(a, b)\n            u = R.multiply(t, a)\n            out = R.subtract(u, t)"
    a, b = _random(shape, dtype), _random(shape, dtype, 1)
    np.testing.assert_allclose(_run_model(params, body, a, b), (a + b) * a - (a + b), rtol=1e-6)
    _run_both(lowered_kernels(params, body, 2), target=schedule_target)


def _softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (13, 7), (3, 1023), (4, 128, 128)])
def test_softmax_matches_numpy(shape, schedule_target):
    params, body = f'x: R.Tensor({shape}, "float32")', "out = R.nn.softmax(x, axis=-1)"
    x = _random(shape)
    np.testing.assert_allclose(_run_model(params, body, x), _softmax(x), rtol=1e-5, atol=1e-6)
    _run_both(lowered_kernels(params, body, 2), target=schedule_target)


def test_symbolic_softmax_matches_numpy():
    params, body = 'x: R.Tensor(("n", 13), "float32")', "out = R.nn.softmax(x, axis=-1)"
    for n in (1, 7, 1023):
        x = _random((n, 13))
        np.testing.assert_allclose(_run_model(params, body, x), _softmax(x), rtol=1e-5, atol=1e-6)


def test_layer_norm_and_reshape_transpose_match_numpy():
    params = 'x: R.Tensor((1, 13, 28), "float32"), g: R.Tensor((28,), "float32"), b: R.Tensor((28,), "float32")'
    body = ("n = R.nn.layer_norm(x, g, b, axes=[-1])\n"
            "            out = R.permute_dims(R.reshape(n, R.shape([1, 13, 4, 7])), axes=[0, 2, 3, 1])")
    x, g, b = _random((1, 13, 28)), _random((28,), seed=1), _random((28,), seed=2)
    normed = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    expected = normed.reshape(1, 13, 4, 7).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(_run_model(params, body, x, g, b), expected, rtol=1e-4, atol=1e-4)


# -- structure ----------------------------------------------------------------------

def _kernel(funcs, part):
    return next(f for name, f in funcs.items() if part in name)


def _global_allocations(func):
    return [b for block in collect(func.body, tir.Block) for b in block.alloc_buffers if b.scope == "global"]


def test_gelu_epilogue_becomes_one_nest_and_the_matmul_writes_the_output():
    func = _kernel(_gelu_module(128, 256, 1024), "matmul")
    assert len(top_level(func.body)[0]) == 7 and len(_global_allocations(func)) == 6
    prepared = reuse_output(inline_elementwise(func))
    statements = top_level(prepared.body)[0]
    assert len(statements) == 2 and _global_allocations(prepared) == []
    output = func.buffer_map[-1][1]
    assert all(any(s.buffer is output for s in collect(stmt, tir.BufferStore)) for stmt in statements)
    erfs = [c for c in collect(statements[1], tir.Call) if c.op == "tir.erf"]
    assert len(erfs) == 1  # the cheap bias add is computed twice, the erf once


def test_softmax_keeps_exp_in_the_output_and_computes_it_once():
    func = _kernel(lowered_kernels('x: R.Tensor((4, 128), "float32")', "out = R.nn.softmax(x, axis=-1)", 2), "softmax")
    prepared = reuse_output(inline_elementwise(func))
    assert len([c for c in collect(prepared.body, tir.Call) if c.op == "tir.exp"]) == 1
    assert [b.shape[-1].value for b in _global_allocations(prepared)] == [1, 1]  # max and sum per row
    assert len(top_level(prepared.body)[0]) == 4


_PATTERNS = """
@I.ir_module
class Module:
    @T.prim_func
    def kernel(x: T.Buffer((8, 16), "float32"), v: T.Buffer((16,), "float32"), w: T.Buffer((16, 4), "float32"),
               out: T.Buffer((8, 4), "float32"), total: T.Buffer((8,), "float32")):
        relu = T.alloc_buffer((8, 16))
        scaled = T.alloc_buffer((16,))
        for i, j in T.grid(8, 16):
            with T.block("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                relu[vi, vj] = T.max(x[vi, vj], T.float32(0.0))
        for j in range(16):
            with T.block("scaled"):
                vj = T.axis.spatial(16, j)
                scaled[vj] = T.exp(v[vj])
        for i, j, k in T.grid(8, 4, 16):
            with T.block("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    out[vi, vj] = T.float32(0.0)
                out[vi, vj] = out[vi, vj] + relu[vi, vk] * w[vk, vj]
        for i, k in T.grid(8, 16):
            with T.block("total"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    total[vi] = T.float32(0.0)
                total[vi] = total[vi] + scaled[vk] * relu[vi, vk]
"""


def test_no_inlining_that_recomputes_elements(schedule_target):
    """relu read by a matmul (once per output column) and exp read in a broadcast stay in memory."""
    (func,) = parse(_PATTERNS).prim_funcs().values()
    assert inline_elementwise(func) is func
    assert reuse_output(func) is func  # the outputs are written by reductions
    results = _run_both({"kernel": func}, target=schedule_target)
    (x, v, w, _, _), outputs = results["kernel"]
    relu = np.maximum(x, 0)
    np.testing.assert_allclose(outputs[3], relu @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs[4], relu @ np.exp(v), rtol=1e-5, atol=1e-5)


_TWICE = """
@I.ir_module
class Module:
    @T.prim_func
    def kernel(x: T.Buffer((7, 13), "float32"), out: T.Buffer((7, 13), "float32")):
        e = T.alloc_buffer((7, 13))
        s = T.alloc_buffer((7, 13))
        for i, j in T.grid(7, 13):
            with T.block("e"):
                vi, vj = T.axis.remap("SS", [i, j])
                e[vi, vj] = T.exp(x[vi, vj])
        for i, j in T.grid(7, 13):
            with T.block("s"):
                vi, vj = T.axis.remap("SS", [i, j])
                s[vi, vj] = x[vi, vj] + T.float32(1.0)
        for i, j in T.grid(7, 13):
            with T.block("out"):
                vi, vj = T.axis.remap("SS", [i, j])
                out[vi, vj] = e[vi, vj] * e[vi, vj] + s[vi, vj] * s[vi, vj]
"""


def test_expensive_producer_read_twice_stays_cheap_one_is_inlined(schedule_target):
    (func,) = parse(_TWICE).prim_funcs().values()
    inlined = inline_elementwise(func)
    assert [b.name for b in _global_allocations(inlined)] == ["e"]
    reused = reuse_output(inlined)
    assert _global_allocations(reused) == []  # exp goes to the output, read there at its own index
    results = _run_both({"kernel": func}, target=schedule_target)
    (x, _), outputs = results["kernel"]
    np.testing.assert_allclose(outputs[1], np.exp(x) ** 2 + (x + 1) ** 2, rtol=1e-5)
    assert default_cpu_schedule(func) is not func
