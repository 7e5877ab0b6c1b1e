"""The lowered module (.vms) read back is the module the one-shot build lowers.

The staged build (relaxc -S, then relaxc --emit kernels on the .vms) must build the
kernels the one-shot build does from the same IR. Kernels built in memory differed
from their printed text read back: a buffer parameter was its buffer's own data
handle (the parser gives each a handle of its own, as TVM does), indices kept
`v * 1 + r * 1` (the parser folds them to `v + r`, as TVM's operators do), float
constants held Python ints, and a kernel read back carried an `s_tir` attribute.
A reshape after a call of a Relax function had two variables named n (the callee's,
leaked through the call's result, and the caller's): the text read back has one.
"""

import pytest

from relax.build import lower
from relax.ir import tir
from relax.ir.analysis import collect
from relax.ir.structural import assert_structural_equal
from relax.script import parse, script
from relax.target import parse_target

CONV = '''
from tvm.script import relax as R

@R.function
def main(x: R.Tensor(("n", 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32"), b: R.Tensor((1, 4, 1, 1), "float32")):
    with R.dataflow():
        c = R.nn.conv2d(x, w, padding=(1, 1))
        d = R.add(c, b)
        e = R.nn.relu(d)
        R.output(e)
    return e
'''

CONCAT = '''
from tvm.script import relax as R

@R.function
def main(x: R.Tensor(("n",), "float32")):
    y = R.concat((x, x))
    z = R.add(y, y)
    return z
'''

CALL_RESHAPE = '''
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
        c = Module.scale(x)
        d = R.reshape(c, R.shape([n * 4]))
        return d
'''


def _sizes_of_one_name(kernel) -> set[str]:
    """The names that several size variables of `kernel` share (its scalar parameters and
    buffer_map shapes): the text reads them back as one variable."""
    roots = [p for p in kernel.params if p.dtype != "handle"]
    roots += [d for _, buffer in kernel.buffer_map for d in buffer.shape]
    sizes = {id(v): v for root in roots for v in collect(root, lambda n: isinstance(n, tir.Var))}
    names = [v.name for v in sizes.values()]
    return {name for name in names if names.count(name) > 1}


@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("source", [CONV, CONCAT, CALL_RESHAPE], ids=["conv2d-bias-relu", "concat-add", "call-reshape"])
def test_printed_kernels_read_back_as_built(source, opt_level):
    lowered = lower(parse(source, "model.relax"), opt_level, target=parse_target("llvm"))
    reread = parse(script(lowered), "model.vms")
    assert lowered.prim_funcs().keys() == reread.prim_funcs().keys()
    for name, kernel in lowered.prim_funcs().items():
        assert not _sizes_of_one_name(kernel), name
        assert_structural_equal(reread.prim_funcs()[name], kernel, map_free_vars=True)
