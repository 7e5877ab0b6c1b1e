"""Every CPU schedule for every CPU model this host runs, on odd sizes, against numpy.

One module holds a zoo of kernels (matmul and gemv with and without epilogues,
batched matmul, conv2d, pooling, softmax, layer_norm, row reductions, exp/erf
rows, transposes) at sizes around every vector width (4, 8, 16 float32 lanes)
and tile size (register tiles of 4 or 8 rows by 32 columns, gemv strips of 64
or 256 columns) the schedules use: 1, 2, 3, primes, one less and one more. `main`
takes the inputs, then the weights (num_input), and returns every result, so each
configuration is one build:

- for each CPU model the host runs (cpu_targets.SCHEDULE_TARGETS): x86-64 (SSE), -v3 (AVX2),
  -v4 (AVX-512, where the host has it), and the host's own CPU where the schedules see it
  as none of those; the schedules size their tiles by the model;
- with the weights passed as arguments, and bound as constants (`params`, as relaxc
  --params does), so that matmul weights take the packed layouts of
  pack-constant-weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import erf

import numpy as np
import pytest

import relax
from relax.script import parse

from cpu_targets import SCHEDULE_TARGETS


@dataclass(frozen=True)
class Case:
    name: str
    inputs: tuple    # (shape, ...) of the inputs
    weights: tuple   # (shape, ...) of the weights
    body: str        # Relax expression over x0.. (inputs) and w0.. (weights)
    reference: object  # numpy function of (inputs, weights)


def _gelu(x):
    return x * 0.5 * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layer_norm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def _conv2d(x, w, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, o, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1))
    for i in range(kh):
        for j in range(kw):
            window = xp[:, :, i:i + out.shape[2], j:j + out.shape[3]]
            out += np.einsum("nchw,oc->nohw", window, w[:, :, i, j])
    return out


def _max_pool(x, size):
    n, c, h, w = x.shape
    return x[:, :, :h // size * size, :w // size * size].reshape(n, c, h // size, size, w // size, size).max(axis=(3, 5))


def _matmul_cases():
    # gemv rows (M = 1) and register tiles, around lanes (4, 8, 16), tiles (4/8 rows,
    # 32-column panels) and gemv strips (64/256 columns; 512 and 768 pack as gemv strips).
    shapes = [(1, 1, 512), (1, 1, 768), (1, 7, 512), (1, 3, 17), (1, 257, 65), (1, 300, 33), (1, 2, 255),
              (1, 17, 257), (1, 784, 10), (2, 5, 31), (3, 33, 32), (4, 1, 64), (5, 16, 63), (7, 255, 96),
              (8, 13, 15), (9, 31, 129), (13, 64, 1), (17, 257, 33), (33, 8, 160)]
    cases = []
    for m, k, n in shapes:
        cases.append(Case(f"matmul_{m}x{k}x{n}", ((m, k),), ((k, n),), "R.matmul(x0, w0)",
                          lambda x, w: x[0] @ w[0]))
    # 70 x 1100: K in k blocks and M no multiple of the tile's rows (an overlapping last tile).
    for m, k, n in [(1, 784, 512), (1, 13, 17), (7, 33, 64), (13, 300, 33), (64, 17, 96), (70, 1100, 48)]:
        cases.append(Case(f"matmul_bias_relu_{m}x{k}x{n}", ((m, k),), ((k, n), (n,)),
                          "R.nn.relu(R.add(R.matmul(x0, w0), w1))",
                          lambda x, w: np.maximum(x[0] @ w[0] + w[1], 0)))
    for m, k, n in [(1, 257, 512), (5, 31, 65)]:
        cases.append(Case(f"matmul_bias_gelu_{m}x{k}x{n}", ((m, k),), ((k, n), (n,)),
                          "R.nn.gelu(R.add(R.matmul(x0, w0), w1))", lambda x, w: _gelu(x[0] @ w[0] + w[1])))
    cases.append(Case("batch_matmul_3x7x17x33", ((3, 7, 17), (3, 17, 33)), (), "R.matmul(x0, x1)",
                      lambda x, w: x[0] @ x[1]))
    cases.append(Case("batch_matmul_2x1x31x17", ((2, 1, 31), (2, 31, 17)), (), "R.matmul(x0, x1)",
                      lambda x, w: x[0] @ x[1]))
    return cases


def _other_cases():
    conv = ('R.nn.conv2d(x0, w0, strides=[1, 1], padding=[{p}, {p}, {p}, {p}], dilation=[1, 1], groups=1, '
            'data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")')
    pool = ('R.nn.max_pool2d(x0, pool_size=[{s}, {s}], strides=[{s}, {s}], dilation=[1, 1], padding=[0, 0, 0, 0], '
            'ceil_mode=False, count_include_pad=False, layout="NCHW", out_layout="NCHW")')
    cases = [
        Case("conv2d_3x17x17_5", ((1, 3, 17, 17),), ((5, 3, 3, 3),), conv.format(p=1),
             lambda x, w: _conv2d(x[0], w[0], 1)),
        Case("conv2d_bias_relu_2x15x33_17", ((1, 2, 15, 33),), ((17, 2, 3, 3), (1, 17, 1, 1)),
             f"R.nn.relu(R.add({conv.format(p=0)}, w1))",
             lambda x, w: np.maximum(_conv2d(x[0], w[0], 0) + w[1], 0)),
        Case("conv2d_1x1_7x9x16", ((1, 7, 9, 16),), ((16, 7, 1, 1),), conv.format(p=0),
             lambda x, w: _conv2d(x[0], w[0], 0)),
        Case("max_pool_2_8x17x33", ((1, 8, 17, 33),), (), pool.format(s=2), lambda x, w: _max_pool(x[0], 2)),
        Case("max_pool_3_3x31x15", ((1, 3, 31, 15),), (), pool.format(s=3), lambda x, w: _max_pool(x[0], 3)),
    ]
    for shape in [(1, 1), (3, 17), (5, 15), (2, 33), (13, 255), (4, 7, 65)]:
        label = "x".join(map(str, shape))
        cases += [
            Case(f"softmax_{label}", (shape,), (), "R.nn.softmax(x0, axis=-1)", lambda x, w: _softmax(x[0])),
            Case(f"layer_norm_{label}", (shape,), ((shape[-1],), (shape[-1],)),
                 "R.nn.layer_norm(x0, w0, w1, axes=[-1], epsilon=1.0000000000000001e-05, center=True, scale=True)",
                 lambda x, w: _layer_norm(x[0], w[0], w[1])),
            Case(f"sum_{label}", (shape,), (), "R.sum(x0, axis=[-1], keepdims=False)", lambda x, w: x[0].sum(axis=-1)),
            Case(f"max_{label}", (shape,), (), "R.max(x0, axis=[-1], keepdims=True)",
                 lambda x, w: x[0].max(axis=-1, keepdims=True)),
            Case(f"gelu_{label}", (shape,), (), "R.nn.gelu(x0)", lambda x, w: _gelu(x[0])),
            Case(f"exp_{label}", (shape,), (), "R.exp(x0)", lambda x, w: np.exp(x[0])),
        ]
    for shape in [(65, 3), (129, 17), (64, 64), (3, 7, 257)]:
        label = "x".join(map(str, shape))
        axes = list(range(len(shape)))[::-1]
        cases.append(Case(f"transpose_{label}", (shape,), (), f"R.permute_dims(x0, axes={axes})",
                          lambda x, w: np.transpose(x[0])))
    return cases


CASES = _matmul_cases() + _other_cases()


def _tensor(shape) -> str:
    return f'R.Tensor({tuple(shape)}, dtype="float32")'


def _zoo():
    """The module's text and the (input, weight) names of each case, in main's parameter order."""
    inputs, weights, names, lines = [], [], [], []
    for index, case in enumerate(CASES):
        xs = [f"c{index}_x{i}" for i in range(len(case.inputs))]
        ws = [f"c{index}_w{i}" for i in range(len(case.weights))]
        inputs += [f"{name}: {_tensor(shape)}" for name, shape in zip(xs, case.inputs)]
        weights += [f"{name}: {_tensor(shape)}" for name, shape in zip(ws, case.weights)]
        body = case.body
        for i, name in reversed(list(enumerate(xs))):
            body = body.replace(f"x{i}", name)
        for i, name in reversed(list(enumerate(ws))):
            body = body.replace(f"w{i}", name)
        lines.append(f"            out{index} = {body}")
        names.append((xs, ws))
    outs = ", ".join(f"out{i}" for i in range(len(CASES)))
    text = f"""
@I.ir_module
class Module:
    @R.function
    def main({", ".join(inputs + weights)}):
        R.func_attr({{"num_input": {len(inputs)}}})
        with R.dataflow():
{chr(10).join(lines)}
            result = ({outs})
            R.output(result)
        return result
"""
    return text, names


def _arrays():
    rng = np.random.default_rng(20261126)
    inputs = [[rng.standard_normal(s).astype("float32") for s in case.inputs] for case in CASES]
    weights = [[rng.standard_normal(s).astype("float32") for s in case.weights] for case in CASES]
    return inputs, weights


TEXT, NAMES = _zoo()
INPUTS, WEIGHTS = _arrays()


def _tolerance(case: Case):
    terms = max([int(np.prod(s[-1:])) for s in case.inputs] + [1])
    return dict(rtol=1e-4, atol=1e-4 * max(1.0, np.sqrt(terms)))


@pytest.mark.parametrize("weights", ["arguments", "constants"])
@pytest.mark.parametrize("target", SCHEDULE_TARGETS)
def test_kernel_zoo_matches_numpy(target, weights):
    params = None
    args = [x for xs in INPUTS for x in xs]
    if weights == "constants":
        params = {name: w for (_, ws), arrays in zip(NAMES, WEIGHTS) for name, w in zip(ws, arrays)}
    else:
        args += [w for ws in WEIGHTS for w in ws]
    exe = relax.build(parse(TEXT), target, opt_level=2, params=params)
    results = relax.VirtualMachine(exe, "cpu")["main"](*args)
    failures = []
    for case, xs, ws, got in zip(CASES, INPUTS, WEIGHTS, results):
        expected = case.reference([x.astype(np.float64) for x in xs], [w.astype(np.float64) for w in ws])
        try:
            np.testing.assert_allclose(np.asarray(got), expected, **_tolerance(case))
        except AssertionError as error:
            failures.append(f"{case.name}: {str(error).strip().splitlines()[2:5]}")
    assert not failures, f"{target}, weights as {weights}:\n" + "\n".join(failures)


EXP = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 17), dtype="float32")):
        y = R.exp(x)
        return y
"""


@pytest.mark.parametrize("target", SCHEDULE_TARGETS)
def test_each_level_runs_its_own_code(target):
    """A level the host has runs the objects built for it, not bitcode compiled again for the host."""
    from relax.runtime.kernels.library import load_kernel_library

    exe = relax.build(parse(EXP), target)
    assert not load_kernel_library(exe.kernel_objects[0]).compiled_on_load
