"""The Python API of DESIGN.md: relax.script.parse, relax.build, exe.export,
relax.load, relax.VirtualMachine, vm["main"](*arrays)."""

import numpy as np

SOURCE = '''
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((3,), dtype="float32")):
        with R.dataflow():
            z = R.nn.relu(R.add(x, y))
            gv = (z, R.sum(z, axis=None, keepdims=False))
            R.output(gv)
        return gv
'''


def test_build_is_callable_after_any_import_order(tmp_path):
    import relax
    import relax.build  # noqa: F401 - binds the submodule as relax.build
    import relax.script

    exe = relax.build(relax.script.parse(SOURCE), "llvm")
    path = tmp_path / "m.vmx"
    exe.export(str(path))
    vm = relax.VirtualMachine(relax.load(str(path)), "cpu")
    x = np.arange(6, dtype="float32").reshape(2, 3) - 2
    y = np.array([1, -1, 0.5], "float32")
    z, total = vm["main"](x, y)
    np.testing.assert_allclose(z, np.maximum(x + y, 0))
    np.testing.assert_allclose(total, np.maximum(x + y, 0).sum(), rtol=1e-6)
