"""End to end: a compiled program calling R.ccl.* runs on 2 workers through the runtime.disco builtins."""

import numpy as np
import pytest

PROGRAM = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((4, 3), dtype="float32"):
        a: R.Tensor((2, 3), dtype="float32") = R.ccl.allreduce(x, op_type="sum", in_group=True)
        b: R.Tensor((4, 3), dtype="float32") = R.ccl.allgather(a, num_workers=2, in_group=True)
        return b
"""


@pytest.fixture(scope="module")
def ccl_vmx(tmp_path_factory):
    from relax.build import build
    from relax.script import parse

    path = tmp_path_factory.mktemp("disco-ccl") / "ccl.vmx"
    build(parse(PROGRAM, "ccl.relax")).export(str(path))
    return str(path)


@pytest.mark.parametrize("kind", ["threads", "processes"])
def test_allreduce_then_allgather_in_a_program(sessions, ccl_vmx, kind):
    session = sessions(kind, 2)
    x = np.arange(12, dtype="float32").reshape(4, 3)
    result = session.load_vm_module(ccl_vmx)["main"](session.scatter(x))
    reduced = x[:2] + x[2:]
    for rank in range(2):
        np.testing.assert_array_equal(result.debug_get_from_remote(rank), np.concatenate([reduced, reduced]))
