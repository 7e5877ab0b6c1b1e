"""A BasePyModule written in a real .py file (`from relax.script import I, R, T`), run by
Python; and the parse/print round trip of Python functions."""

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

from relax import ir
from relax.diagnostics import DiagnosticError, UserError
from relax.script import parse, script

PY_FILE = '''
import numpy as np
from relax.script import I, R, T
from relax.script import R as Rx
from relax import BasePyModule


@I.ir_module
class M(BasePyModule):
    @T.prim_func
    def add_one(var_a: T.handle, var_b: T.handle):
        n = T.int64()
        A = T.match_buffer(var_a, (n,), "float32")
        B = T.match_buffer(var_b, (n,), "float32")
        for i in range(n):
            with T.block("b"):
                vi = T.axis.spatial(n, i)
                B[vi] = A[vi] + T.float32(1)

    @R.function
    def double(x: Rx.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        return R.add(x, x)

    @I.py_func
    def main(self, x: np.ndarray) -> np.ndarray:
        y = self.call_tir(self.add_one, [x], out_sinfo=R.Tensor(("n",), "float32"))
        return self.clip(self.double(y))

    @I.py_func
    def clip(self, x):
        return np.minimum(x, LIMIT)  # a global of this file


LIMIT = 5.0


@I.ir_module
class Plain:
    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        return x
'''


def _import(tmp_path, monkeypatch, name, text):
    """Imports `text` as the module `name` from a file, as `python file.py` or `import` would."""
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # inspect finds a class's file through it
    spec.loader.exec_module(module)
    return module


def test_a_class_in_a_python_file_builds_and_runs(tmp_path, monkeypatch):
    module = _import(tmp_path, monkeypatch, "py_module_file", PY_FILE)
    m = module.M("cpu")
    x = np.float32([0, 1, 2, 3])
    np.testing.assert_allclose(m.main(x), np.minimum((x + 1) * 2, 5.0), atol=1e-6)
    assert isinstance(module.M.ir_mod["main"], ir.PyFunction)
    assert module.M.ir_mod["clip"].source.startswith("@I.py_func\ndef clip(self, x):\n")
    assert isinstance(module.Plain, ir.IRModule)  # not a BasePyModule: the module itself


def test_a_parse_error_points_into_the_python_file(tmp_path, monkeypatch):
    text = "from relax.script import I\n\n\n@I.ir_module\nclass Bad:\n    @I.py_func\n    def f(self):\n        pass\n"
    with pytest.raises(DiagnosticError) as error:
        _import(tmp_path, monkeypatch, "py_module_bad", text)
    rendered = str(error.value.diagnostics[0].span)
    assert rendered.endswith("py_module_bad.py:6:6"), rendered


def test_a_class_without_source_text_is_a_user_error():
    from relax.script import I

    namespace = {"I": I}
    with pytest.raises(UserError, match="the source of class 'Nowhere' is not available"):
        exec("@I.ir_module\nclass Nowhere:\n    pass\n", namespace)  # noqa: S102


ROUND_TRIP = textwrap.dedent('''\
    # from tvm.script import ir as I
    # from tvm.script import relax as R

    @I.ir_module
    class Module(BasePyModule):
        @R.function
        def f(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
            return x

        @I.py_func
        def main(self, x):
            """A docstring
            over two lines."""
            y = self.f(x)  # a comment

            return y
    ''')


def test_python_functions_round_trip_exactly():
    module = parse(ROUND_TRIP)
    assert module["main"].source.splitlines()[:2] == ["@I.py_func", "def main(self, x):"]
    printed = script(module)
    assert printed == ROUND_TRIP
    ir.assert_structural_equal(parse(printed), module)


def test_a_loose_python_function_is_a_located_error():
    with pytest.raises(DiagnosticError, match="only allowed in a module that subclasses BasePyModule"):
        parse("from tvm.script import ir as I\n\n@I.py_func\ndef f(self):\n    return 1\n")
