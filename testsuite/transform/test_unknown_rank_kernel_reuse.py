"""Elementwise calls on tensors of unknown rank: every call of one operator and dtype gets
the same kernel body, so code generation builds it once (codegen/kernel_dedup.py). Each
call's kernel had its caller's numbered size names (d0_7, ...) and a chain of 200 adds
built 200 kernels, past 20 s (robustness fuzz, seed 20261130, case 3429)."""

from relax.build import lower
from relax.codegen.kernel_dedup import body_key
from relax.script import parse

SOURCE = """
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32"), y: R.Tensor(dtype="float32")) -> R.Tensor(dtype="float32"):
        a = R.add(x, y)
        b = R.add(a, y)
        c = R.add(b, x)
        return c
"""


def test_three_unknown_rank_adds_share_one_kernel_body():
    kernels = lower(parse(SOURCE), 0).prim_funcs()
    adds = [func for name, func in kernels.items() if name.startswith("add")]
    assert len(adds) == 3
    assert len({body_key(func) for func in adds}) == 1
