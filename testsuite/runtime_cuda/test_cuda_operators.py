"""Operators on the GPU against numpy (gpu-marked), each one built for cuda first (nvrtc-marked),
with static and symbolic shapes."""

import numpy as np
import pytest

from relax.build import build
from relax.script import parse
from relax.vm import VirtualMachine


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layer_norm(x, g, b):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b


# name -> (relax call, parameter shapes, numpy reference)
OPERATORS = {
    "add": ("R.add(a, b)", [("n", 37), ("n", 37)], np.add),
    "multiply_broadcast": ("R.multiply(a, b)", [("n", 64), (64,)], np.multiply),
    "exp": ("R.exp(a)", [("n", 100)], np.exp),
    "relu": ("R.nn.relu(a)", [("n", 33)], lambda a: np.maximum(a, 0)),
    "sum": ("R.sum(a, axis=[1])", [("n", 300)], lambda a: a.sum(1)),
    "max": ("R.max(a, axis=[1])", [("n", 300)], lambda a: a.max(1)),
    "softmax": ("R.nn.softmax(a, axis=-1)", [("n", 129)], softmax),
    "layer_norm": ("R.nn.layer_norm(a, b, c, axes=[-1], epsilon=1e-5)", [("n", 96), (96,), (96,)], layer_norm),
    "matmul": ("R.matmul(a, b)", [("n", 70), (70, 45)], np.matmul),
    "transpose": ("R.permute_dims(a, axes=[1, 0])", [("n", 19)], np.transpose),
}
NAMES = ["a", "b", "c"]


def module_text(call, shapes, symbolic: bool) -> str:
    def dims(shape):
        values = [("n" if symbolic else "5") if d == "n" else str(d) for d in shape]
        return f'({", ".join(values)}{"," if len(values) == 1 else ""})'

    params = ", ".join(f'{NAMES[i]}: R.Tensor({dims(s)}, dtype="float32")' for i, s in enumerate(shapes))
    return ('n = TypeVar("n")\n' if symbolic else "") + f"""
@I.ir_module
class Module:
    @R.function
    def main({params}):
        with R.dataflow():
            out = {call}
            R.output(out)
        return out
"""


def inputs(shapes, batch, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal([batch if d == "n" else d for d in s]).astype(np.float32) for s in shapes]


@pytest.mark.nvrtc
@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_operator_builds_for_cuda(op, symbolic):
    call, shapes, _ = OPERATORS[op]
    exe = build(parse(module_text(call, shapes, symbolic)), "cuda -arch=sm_90")
    [(_, kernel_object)] = exe.device_kernel_objects
    assert kernel_object.kernels and all(k.launches for k in kernel_object.kernels)
    assert any(k.symbolic_vars for k in kernel_object.kernels) == symbolic


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [5, 1, 67])
@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_operator_on_gpu_matches_numpy(op, batch):
    call, shapes, reference = OPERATORS[op]
    symbolic = batch != 5
    vm = VirtualMachine(build(parse(module_text(call, shapes, symbolic)), "cuda"), "cuda")
    args = inputs(shapes, batch)
    result = vm["main"](*args)
    assert isinstance(result, np.ndarray)
    np.testing.assert_allclose(result, reference(*args), rtol=1e-4, atol=1e-4)
