"""BindParams: weights (parameters after num_input) to constants, by name."""

import numpy as np
import pytest

from relax.diagnostics import DiagnosticError
from relax.ir import expr as rx
from relax.ir.structural import structural_equal
from relax.ir.visitor import pre_order
from relax.script import parse, script
from relax.transform.bind_params import CONFIG_KEY, BindParams
from relax.ir.pass_infra import PassContext, run_passes

SOURCE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 2), dtype="float32"), w: R.Tensor((3, 2), dtype="float32"), b: R.Tensor(("m",), dtype="float32"), c: R.Tensor(("m",), dtype="float32")) -> R.Tensor(("n", 3), dtype="float32"):
        R.func_attr({"num_input": 1})
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            lv: R.Tensor((2, 3), dtype="float32") = R.permute_dims(w, axes=[1, 0])
            lv1: R.Tensor((n, 3), dtype="float32") = R.matmul(x, lv, out_dtype=None)
            lv2: R.Tensor((m,), dtype="float32") = R.add(b, c)
            gv: R.Tensor((n, 3), dtype="float32") = R.add(lv1, lv2)
            R.output(gv)
        return gv
'''

W = np.arange(6, dtype="float32").reshape(3, 2)
B = np.ones(3, "float32")


def constants(func) -> list[np.ndarray]:
    return [n.data for n in pre_order(func) if isinstance(n, rx.Constant)]


def test_every_weight_bound_leaves_the_inputs_and_drops_num_input():
    mod = parse(SOURCE)
    before = script(mod)
    bound = BindParams({"w": W, "b": B, "c": B}).run(mod)
    main = bound["main"]
    assert [p.name_hint for p in main.params] == ["x"]
    assert "num_input" not in main.attrs
    assert [c.shape for c in constants(main)] == [(3, 2), (3,), (3,)]
    # The symbolic size m is 3 everywhere once b and c are bound; n stays symbolic.
    assert 'R.Tensor((3,), dtype="float32") = R.add(' in script(bound)
    assert 'def main(x: R.Tensor((n, 2), dtype="float32")) -> R.Tensor((n, 3), dtype="float32"):' in script(bound)
    assert 'm = TypeVar("m")' not in script(bound)
    assert script(mod) == before  # the input module is untouched


def test_some_weights_bound_keep_num_input():
    main = BindParams({"w": W}).run(parse(SOURCE))["main"]
    assert [p.name_hint for p in main.params] == ["x", "b", "c"]
    assert main.attrs["num_input"] == 1


def test_nothing_to_bind_is_the_identity():
    mod = parse(SOURCE)
    assert BindParams().run(mod) is mod
    assert BindParams({}).run(mod) is mod


def test_the_arrays_may_come_from_the_pass_context(tmp_path):
    path = tmp_path / "w.npz"
    np.savez(path, w=W, b=B, c=B)
    mod = parse(SOURCE)
    with PassContext(config={CONFIG_KEY: str(path)}) as context:
        from_file = run_passes(mod, ["bind-params"], context)
    assert structural_equal(from_file, BindParams({"w": W, "b": B, "c": B}).run(mod))


@pytest.mark.parametrize("params, message", [
    ({"w": W.T}, "parameter 'w' is R.Tensor((3, 2), dtype=\"float32\"), but 'w' in the parameters is (2, 3) float32"),
    ({"w": W.astype("float64")}, "but 'w' in the parameters is (3, 2) float64"),
    ({"w": W[None]}, "but 'w' in the parameters is (1, 3, 2) float32"),
    ({"b": B, "c": np.ones(4, "float32")}, "parameter 'c' is R.Tensor((m,), dtype=\"float32\"), but 'c' in the parameters is (4,) float32: 'm' is 3 (from 'b')"),
    ({"x": np.ones((1, 2), "float32")}, "'x' in the parameters is an input of main (num_input=1), not a weight"),
    ({"v": W}, "'v' in the parameters is not a parameter of main (its weights: 'w', 'b', 'c')"),
])
def test_what_does_not_fit_is_an_error_at_the_parameter(params, message):
    with pytest.raises(DiagnosticError) as info:
        BindParams(params).run(parse(SOURCE, "model.relax"))
    (diagnostic,) = info.value.diagnostics
    assert message in diagnostic.message
    if "not a parameter" not in message:
        assert diagnostic.span.source == "model.relax" and diagnostic.span.line == 5


def test_every_error_is_reported():
    with pytest.raises(DiagnosticError) as info:
        BindParams({"w": W.T, "b": B.astype("int32"), "q": B}).run(parse(SOURCE))
    assert [d.message.split("'")[1] for d in info.value.diagnostics] == ["w", "b", "q"]
