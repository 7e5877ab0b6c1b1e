"""Local functions and closures through the whole pipeline (LambdaLift + VM closures)."""

import pathlib

import numpy as np
import pytest

from relax.build import build
from relax.script import parse
from relax.vm import VirtualMachine

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "corpus"

CAPTURING = '''
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), dtype="float32"), w: R.Tensor((3,), dtype="float32")) -> R.Tensor((3,), dtype="float32"):
        @R.function
        def scale(y: R.Tensor((3,), dtype="float32")) -> R.Tensor((3,), dtype="float32"):
            z: R.Tensor((3,), dtype="float32") = R.multiply(y, w)
            return z

        a: R.Tensor((3,), dtype="float32") = scale(x)
        b: R.Tensor((3,), dtype="float32") = scale(a)
        return b
'''


@pytest.mark.parametrize("opt_level", [0, 2])
def test_local_function_from_the_corpus(opt_level):
    mod = parse((CORPUS / "relax_local_function.tvmscript").read_text())
    x = np.array([1.5, -2.0], "float32")
    out = VirtualMachine(build(mod, opt_level=opt_level), "cpu")["main"](x)
    np.testing.assert_array_equal(out, x + x)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_closure_capturing_a_parameter(opt_level):
    x, w = np.array([1, 2, 3], "float32"), np.array([2, -1, 0.5], "float32")
    out = VirtualMachine(build(parse(CAPTURING), opt_level=opt_level), "cpu")["main"](x, w)
    np.testing.assert_allclose(out, x * w * w)
