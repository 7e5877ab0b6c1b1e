"""R.call_py_func inside a BasePyModule: a Relax function calls the module's own Python function."""

import numpy as np

import relax
from relax.script import parse

SOURCE = '''
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module(BasePyModule):
    @I.py_func
    def relu(self, x):
        return np.maximum(x, 0)

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        y = R.call_py_func(cls.relu, (x,), out_sinfo=R.Tensor((4,), "float32"))
        z = R.add(y, y)
        return z
'''


def test_a_relax_function_calls_the_modules_python_function():
    module = relax.BasePyModule(parse(SOURCE))
    x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    np.testing.assert_array_equal(module.main(x), 2 * np.maximum(x, 0))
