"""A call of a Relax function gives its result in the caller's symbolic sizes.

`scale(x: R.Tensor(("n", 4))) -> R.Tensor(("n", 4))` called from `main` returned a tensor
of scale's own n: main's struct info then named a variable main never defines, and the
reshape to (n * 4,) after it was legalized into a kernel with two variables named n (its
input's, bound by no one in main, and main's, passed as a scalar), which codegen refused
("variable 'n' is used but never defined"). relaxc only built it because printing and
reading the module back unified the two by name. Each kernel now has one n, bound from
its input buffer, as TVM's legalization does. Results against numpy (float32, exact:
the values are small multiples of powers of two).
"""

import numpy as np
import pytest

from relax.build import build
from relax.ir.pass_infra import PassContext, run_passes
from relax.script import parse
from relax.vm import VirtualMachine

# A symbolic size through a call, then an operator of it (unfused at -O0; -O2 fuses the
# reshape with nothing here, the call is a function boundary).
THROUGH_CALL = '''
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T

@I.ir_module
class Module:
    @R.function
    def scale(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n", 4), "float32"):
        y = R.multiply(x, R.const(2.0, "float32"))
        return y

    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        cls = Module
        with R.dataflow():
            a = R.nn.relu(x)
            c = cls.scale(a)
            d = R.reshape(c, R.shape([n * 4]))
            R.output(d)
        return d
'''

# The same sizes in one function: -O2 fuses the add and the reshape into one kernel.
FUSIBLE = '''
from tvm.script import relax as R
from tvm.script import tir as T

@R.function
def main(x: R.Tensor(("n", 4), "float32")):
    n = T.int64()
    with R.dataflow():
        a = R.add(x, x)
        d = R.reshape(a, R.shape([n * 4]))
        e = R.negative(d)
        R.output(e)
    return e
'''

# A callee whose size the argument does not give (a tensor of rank 1, no shape).
UNKNOWN_SIZE = '''
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def twice(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        y = R.add(x, x)
        return y

    @R.function
    def main(x: R.Tensor(ndim=1, dtype="float32"), s: R.Tensor((3,), "float32")):
        a = Module.twice(x)
        b = Module.twice(s)
        return (a, b)
'''


@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("source, expected", [
    (THROUGH_CALL, lambda x: (np.maximum(x, 0) * 2).reshape(-1)),
    (FUSIBLE, lambda x: -(x + x).reshape(-1)),
], ids=["through-call", "fusible"])
def test_reshape_to_a_product_of_sizes_runs(source, expected, opt_level):
    x = np.arange(-6, 6, dtype="float32").reshape(3, 4) / 4
    out = VirtualMachine(build(parse(source), "llvm", opt_level), "cpu")["main"](x)
    np.testing.assert_array_equal(out, expected(x))


def _normalized_main(source):
    with PassContext(opt_level=0) as context:
        return run_passes(parse(source), ["normalize"], context)["main"]


def test_call_result_names_the_callers_size():
    main = _normalized_main(THROUGH_CALL)
    (n,) = main.params[0].struct_info.shape_values[:1]
    call = main.body.blocks[0].bindings[1]
    assert call.var.struct_info.shape_values[0] is n


def test_call_result_without_the_size_keeps_the_rank():
    main = _normalized_main(UNKNOWN_SIZE)
    a, b = (binding.var.struct_info for binding in main.body.blocks[0].bindings[:2])
    assert a.shape is None and a.ndim == 1  # twice's n is not main's: erased
    assert [d.value for d in b.shape_values] == [3]
