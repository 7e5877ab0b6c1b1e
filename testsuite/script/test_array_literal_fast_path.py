"""Long R.const literals: read through json (script.array_literals) and printed with
one formatting call per element, with exactly the results of the general paths."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from parse_helpers import bindings, errors, function

from relax.script import array_literals
from relax.script import printer_arrays


def _nested(values: np.ndarray) -> str:
    return printer_arrays.array_text(values)


def _constant(literal: str, dtype: str = "float32"):
    (binding,) = bindings(function(f'''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            c = R.const({literal}, "{dtype}")
            return x
    '''))
    return binding.value.data


def test_long_literal_goes_through_the_table_with_the_same_values(monkeypatch):
    data = (np.random.default_rng(1).standard_normal((9, 40)) * 1e3).astype("float32")
    data[0, :5] = [0.0, -0.0, 2.0, -7.0, 1e20]
    literal = _nested(data)
    text, table = array_literals.extract(f"c = R.const({literal}, 'float32')\n")
    assert len(table) == 1 and "[" not in text and len(text) == len(literal) + len("c = R.const(, 'float32')\n")
    fast = _constant(literal)
    monkeypatch.setattr(array_literals, "MIN_LENGTH", 10**9)
    slow = _constant(literal)
    assert fast.dtype == slow.dtype == np.float32 and fast.shape == (9, 40)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast, data)


def test_integer_literals_keep_their_dtype():
    data = np.arange(-200, 200, dtype="int64").reshape(20, 20)
    got = _constant(_nested(data), "int64")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, data)


@pytest.mark.parametrize("odd", [".5", "5.", "+1.0", '"nan"', "True", "1.0\n"])
def test_literals_json_does_not_read_stay_on_the_ordinary_path(odd):
    literal = "[" + ", ".join(["1.25"] * 100 + [odd]) + "]"
    text, table = array_literals.extract(f"R.const({literal})")
    assert table == {} and text == f"R.const({literal})"
    assert array_literals.extract(f"R.const({literal.replace(odd, '1.5')})")[1] != {}


def test_columns_after_a_replaced_literal_are_unchanged(monkeypatch):
    literal = _nested(np.full((300,), 0.5, "float32"))
    source = f'''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            c = R.const({literal}, "float32"); d = R.add(x, nonexistent_var)
            return x
    '''
    fast = errors(source)
    assert any("nonexistent_var" in message and column > len(literal) for _, column, message in fast)
    monkeypatch.setattr(array_literals, "MIN_LENGTH", 10**9)
    assert errors(source) == fast


def test_unbalanced_or_short_literals_are_left_alone():
    assert array_literals.extract("R.const([1.0, 2.0], 'float32')")[1] == {}
    assert array_literals.extract("R.const([[" + "1.0, " * 100)[1] == {}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "uint8", "bool"])
def test_printed_elements_match_the_scalar_printer(dtype):
    rng = np.random.default_rng(2)
    samples = [rng.standard_normal((7, 13)) * 100, np.array([1.0, 2.5, -0.0, 0.0, 1e20, 3e-30, -7.0]),
               np.array([np.nan, np.inf, -np.inf, 1.5]), np.arange(12.0).reshape(3, 4)]
    for sample in samples:
        with np.errstate(invalid="ignore", over="ignore"):
            data = sample.astype(dtype)
        expected = [printer_arrays._scalar_text(v) for v in data.reshape(-1).tolist()]
        assert printer_arrays._flat_texts(data) == expected


def _module_with_constants(weights: dict):
    from relax.script import script

    body = "\n".join(f'            {name} = R.const({_nested(value)}, "{value.dtype}")' for name, value in weights.items())
    text = script(function(f'''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
{body}
            return x
    '''))
    return text


def test_deferred_arrays_print_as_placeholders_and_read_back_bit_identical():
    from relax.script import parse, script

    rng = np.random.default_rng(3)
    weights = {"w": rng.standard_normal((16, 8)).astype("float32"), "i": np.arange(100, dtype="int64"),
               "h": rng.standard_normal(70).astype("float16"), "n": np.array([np.nan] * 70, "float32"),
               "s": np.ones(3, "float32")}
    mod = parse(_module_with_constants(weights), "m.relax")
    table = {}
    with array_literals.printing(table):
        text = script(mod)
    assert sorted(v.dtype.name for v in table.values()) == ["float16", "float32", "int64"]  # not nan, not tiny
    assert "__relax_deferred_array_" in text and "nan" in text and "[1.0, 1.0, 1.0]" in text
    assert script(mod) != text  # outside printing(): all text
    with array_literals.reading(table):
        back = parse(text, "m.vms")
    got = [b.value.data for b in bindings(back["main"])]
    for value, original in zip(got, weights.values()):
        assert value.dtype == original.dtype
        np.testing.assert_array_equal(value.view(f"u{value.itemsize}"), original.view(f"u{original.itemsize}"))
    with pytest.raises(Exception):
        parse(text, "m.vms")  # the placeholders mean nothing outside reading()


DENSE = '''\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 64), dtype="float32"), w: R.Tensor((96, 64), dtype="float32"),
             b: R.Tensor((96,), dtype="float32")) -> R.Tensor((1, 96), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            lv: R.Tensor((64, 96), dtype="float32") = R.permute_dims(w, axes=[1, 0])
            lv1: R.Tensor((1, 96), dtype="float32") = R.matmul(x, lv, out_dtype=None)
            gv: R.Tensor((1, 96), dtype="float32") = R.add(lv1, b)
            R.output(gv)
        return gv
'''


def test_one_shot_with_large_weights_equals_the_staged_build(tmp_path):
    """The one-shot defers the weights (array_literals.printing/reading); relaxc -S prints them."""

    rng = np.random.default_rng(4)
    params = tmp_path / "w.npz"
    np.savez(params, w=rng.standard_normal((96, 64)).astype("float32"), b=rng.standard_normal(96).astype("float32"))
    source = tmp_path / "dense.relax"
    source.write_text(DENSE)
    env = dict(os.environ, RELAX_CACHE="0")

    def tool(*args):
        subprocess.run([sys.executable, "-m", *args], env=env, check=True, cwd=tmp_path)

    (tmp_path / "staged").mkdir()
    # The staged files are named after the source, as the one-shot names its intermediates.
    tool("relaxc", "-S", str(source), "--params", str(params), "-o", "staged/dense.vms")
    tool("relaxas", "staged/dense.vms", "-o", "staged/dense.vmo")
    tool("relaxc", "--emit", "kernels", "staged/dense.vms", "-o", "staged/dense.ko")
    tool("relaxld", "staged/dense.vmo", "staged/dense.ko", "-o", "staged/m.vmx")
    tool("relaxc", str(source), "--params", str(params), "-o", "m.vmx")
    assert (tmp_path / "m.vmx").read_bytes() == (tmp_path / "staged" / "m.vmx").read_bytes()
