"""Compile-time sharding: propagate-sharding on small programs, and the lowered MLP on a
ThreadedSession(2) against numpy."""

import numpy as np
import pytest

from relax.diagnostics import DiagnosticError
from relax.ir.dtensor import DTensorStructInfo
from relax.script import parse
from relax.transform import get_pass, run_passes

HEAD = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    I.module_global_infos({"mesh": [R.device_mesh((2,), I.Range(0, 2))]})
    @R.function
"""

MLP = HEAD + """    def main(x: R.Tensor((4, 8), dtype="float32"), w1: R.Tensor((8, 16), dtype="float32"), b1: R.Tensor((16,), dtype="float32"), w2: R.Tensor((16, 8), dtype="float32"), b2: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        w1a: R.Tensor((8, 16), dtype="float32") = R.dist.annotate_sharding(w1, device_mesh="mesh[0]", placement="S[1]")
        w2a: R.Tensor((16, 8), dtype="float32") = R.dist.annotate_sharding(w2, device_mesh="mesh[0]", placement="S[0]")
        h: R.Tensor((4, 16), dtype="float32") = R.matmul(x, w1a, out_dtype="float32")
        hb: R.Tensor((4, 16), dtype="float32") = R.add(h, b1)
        hr: R.Tensor((4, 16), dtype="float32") = R.nn.gelu(hb)
        p: R.Tensor((4, 8), dtype="float32") = R.matmul(hr, w2a, out_dtype="float32")
        out: R.Tensor((4, 8), dtype="float32") = R.add(p, b2)
        return out
"""


def _propagate(text):
    return run_passes(parse(text, "t.relax"), [get_pass("normalize"), get_pass("propagate-sharding")])


def _placements(mod):
    func = mod["main"]
    found = {p.name_hint: p.struct_info.placement[0] for p in func.params}
    for block in func.body.blocks:
        for binding in block.bindings:
            info = binding.var.struct_info
            found[binding.var.name_hint] = info.placement[0] if isinstance(info, DTensorStructInfo) else None
    return found


def test_mlp_layouts_follow_the_two_weights():
    found = _placements(_propagate(MLP))
    assert found == {"x": "R", "w1": "S[1]", "b1": "S[0]", "w2": "S[0]", "b2": "R",
                     "h": "S[1]", "hb": "S[1]", "hr": "S[1]", "p": "R", "out": "R"}


def test_row_split_flows_through_broadcast_and_elementwise():
    text = HEAD + """    def main(x: R.Tensor((4, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        xa: R.Tensor((4, 8), dtype="float32") = R.dist.annotate_sharding(x, device_mesh="mesh[0]", placement="S[0]")
        y: R.Tensor((4, 8), dtype="float32") = R.add(xa, b)
        z: R.Tensor((4, 8), dtype="float32") = R.exp(y)
        return z
"""
    assert _placements(_propagate(text)) == {"x": "S[0]", "b": "R", "y": "S[0]", "z": "S[0]"}


def test_conflicting_splits_are_an_error_at_the_operator():
    text = HEAD + """    def main(x: R.Tensor((4, 4), dtype="float32"), y: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        xa: R.Tensor((4, 4), dtype="float32") = R.dist.annotate_sharding(x, device_mesh="mesh[0]", placement="S[0]")
        ya: R.Tensor((4, 4), dtype="float32") = R.dist.annotate_sharding(y, device_mesh="mesh[0]", placement="S[1]")
        z: R.Tensor((4, 4), dtype="float32") = R.add(xa, ya)
        return z
"""
    with pytest.raises(DiagnosticError, match="cannot shard R.add: its inputs are split along different axes") as caught:
        _propagate(text)
    assert caught.value.diagnostics[0].span.line == 11


def test_lowered_mlp_on_two_threads_equals_numpy(tmp_path):
    from relax.build import build
    from relax.disco import ThreadedSession

    path = tmp_path / "mlp.vmx"
    build(parse(MLP, "mlp.relax")).export(str(path))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype("float32") for s in ((4, 8), (8, 16), (16,), (16, 8), (8,))]
    x, w1, b1, w2, b2 = args
    h = x @ w1 + b1
    gelu = 0.5 * h * (1 + np.vectorize(__import__("math").erf)(h / np.sqrt(2)))
    expected = gelu @ w2 + b2
    with ThreadedSession(2) as sess:
        result = sess.load_vm_module(str(path))["main"](*[sess.broadcast(a) for a in args])
        for rank in range(2):
            np.testing.assert_allclose(result.debug_get_from_remote(rank), expected, rtol=1e-4, atol=1e-5)


def _run_on_two(tmp_path, text, args):
    """The lowered program's result on each worker of a ThreadedSession(2)."""
    from relax.build import build
    from relax.disco import ThreadedSession

    path = tmp_path / "prog.vmx"
    build(parse(text, "prog.relax")).export(str(path))
    with ThreadedSession(2) as sess:
        result = sess.load_vm_module(str(path))["main"](*[sess.broadcast(a) for a in args])
        return [result.debug_get_from_remote(rank) for rank in range(2)]


def _one_op(shape, placement, call, out_shape):
    dims = ", ".join(map(str, shape))
    out = ", ".join(map(str, out_shape)) + ("," if len(out_shape) == 1 else "")
    return HEAD + f"""    def main(x: R.Tensor(({dims}), dtype="float32")) -> R.Tensor(({out}), dtype="float32"):
        xa: R.Tensor(({dims}), dtype="float32") = R.dist.annotate_sharding(x, device_mesh="mesh[0]", placement="{placement}")
        y: R.Tensor(({out}), dtype="float32") = {call}
        return y
"""


def test_layouts_through_permute_reduce_and_softmax_as_tvm_prints_them():
    text = HEAD + """    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        xa: R.Tensor((4, 8), dtype="float32") = R.dist.annotate_sharding(x, device_mesh="mesh[0]", placement="S[1]")
        t: R.Tensor((8, 4), dtype="float32") = R.permute_dims(xa, axes=[1, 0])
        sm: R.Tensor((8, 4), dtype="float32") = R.nn.softmax(t, axis=1)
        s: R.Tensor((8,), dtype="float32") = R.sum(sm, axis=[1], keepdims=False)
        m: R.Tensor((4,), dtype="float32") = R.max(t, axis=[0], keepdims=False)
        return s
"""
    # TVM 0.27's PropagateSharding prints t and sm S[0], a sum keeping the split S[0],
    # a max over the split axis R.
    assert _placements(_propagate(text)) == {"x": "S[1]", "t": "S[0]", "sm": "S[0]", "s": "S[0]", "m": "R"}


def test_permute_dims_split_follows_the_permutation_on_two_threads(tmp_path):
    x = np.arange(2 * 4 * 6, dtype="float32").reshape(2, 4, 6)
    text = _one_op((2, 4, 6), "S[1]", 'R.permute_dims(xa, axes=[2, 0, 1])', (6, 2, 4))
    expected = x.transpose(2, 0, 1)
    parts = _run_on_two(tmp_path, text, [x])
    for rank in range(2):  # y is S[2]: each worker returns its own half of axis 2
        np.testing.assert_array_equal(parts[rank], expected[:, :, 2 * rank:2 * rank + 2])


@pytest.mark.parametrize("op", ["sum", "max", "min", "mean"])
def test_reduction_over_the_split_axis_is_allreduced_on_two_threads(tmp_path, op):
    x = np.random.default_rng(1).standard_normal((4, 6)).astype("float32")
    text = _one_op((4, 6), "S[1]", f'R.{op}(xa, axis=[1], keepdims=False)', (4,))
    expected = getattr(np, op)(x, axis=1)
    for part in _run_on_two(tmp_path, text, [x]):  # replicated: every worker holds the whole result
        np.testing.assert_allclose(part, expected, rtol=1e-5, atol=1e-6)


def test_reduction_keeping_the_split_axis_reindexes_it_on_two_threads(tmp_path):
    x = np.random.default_rng(2).standard_normal((2, 4, 6)).astype("float32")
    text = _one_op((2, 4, 6), "S[2]", 'R.mean(xa, axis=[0, 1], keepdims=False)', (6,))
    assert _placements(_propagate(text))["y"] == "S[0]"
    expected = x.mean(axis=(0, 1))
    parts = _run_on_two(tmp_path, text, [x])
    for rank in range(2):
        np.testing.assert_allclose(parts[rank], expected[3 * rank:3 * rank + 3], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_off_the_split_axis_keeps_the_split_on_two_threads(tmp_path, op):
    x = np.random.default_rng(3).standard_normal((4, 6)).astype("float32")
    text = _one_op((4, 6), "S[0]", f"R.nn.{op}(xa, axis=1)", (4, 6))
    shifted = x - x.max(axis=1, keepdims=True)
    log = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    expected = log if op == "log_softmax" else np.exp(log)
    parts = _run_on_two(tmp_path, text, [x])
    for rank in range(2):
        np.testing.assert_allclose(parts[rank], expected[2 * rank:2 * rank + 2], rtol=1e-5, atol=1e-6)


def test_softmax_over_the_split_axis_is_an_error():
    text = _one_op((4, 6), "S[1]", "R.nn.softmax(xa, axis=-1)", (4, 6))
    with pytest.raises(DiagnosticError, match="cannot shard R.nn.softmax: it normalizes over axis 1, which is split"):
        _propagate(text)
