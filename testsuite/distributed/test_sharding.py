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
