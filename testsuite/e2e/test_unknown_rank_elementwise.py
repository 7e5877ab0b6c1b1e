"""Elementwise operators on tensors of unknown rank (R.Tensor(dtype="float32")) or unknown
shape (R.Tensor(ndim=2)): kernels over the flat element count, broadcasting decided at
run time (op/runtime_shape.py, vm/machine/broadcast.py), through the one-shot and the
staged tools, against numpy (float32, rtol 1e-6)."""

from __future__ import annotations

import numpy as np
import pytest

from relax.build import build
from relax.script import parse
from relax.vm import VirtualMachine
from relaxas.cli import main as relaxas
from relaxc.cli import main as relaxc
from relaxld.cli import main as relaxld
from relaxrun.cli import main as relaxrun

EXP_ADD = """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32"), y: R.Tensor(dtype="float32")) -> R.Tensor(dtype="float32"):
        gv = R.add(R.exp(x), y)
        return gv
"""

# Known rank with unknown sizes, a static operand, a constant, bool and integer results, in a
# dataflow block, and symbolic sizes that may or may not broadcast ((n,) with (m,)).
MIXED = """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2), y: R.Tensor((3,), dtype="float32"), z: R.Tensor(dtype="int32"),
             u: R.Tensor(("n",), dtype="float32"), v: R.Tensor(("m",), dtype="float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.clip(R.multiply(a, y), 0.0, 2.0)
            c = R.less(z, R.const(2, "int32"))
            d = R.maximum(R.negative(z), z)
            e = R.subtract(u, v)
            R.output(a, b, c, d, e)
        return (b, c, d, e)
"""

SHAPES = [((2, 3), (3,)), ((4,), (4,)), ((2, 1, 3), (1, 5, 1)), ((), (2, 3))]


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    """The one-shot and the staged build of EXP_ADD (the staged one in a folder of its own,
    so that both lowered modules are named model.vms)."""
    root = tmp_path_factory.mktemp("unknown_rank")
    source = root / "model.relax"
    source.write_text(EXP_ADD)
    staged = root / "staged"
    staged.mkdir()
    assert relaxc([str(source), "--target", "llvm", "-o", str(root / "model.vmx")]) == 0
    assert relaxc(["-S", str(source), "-o", str(staged / "model.vms")]) == 0
    assert relaxas([str(staged / "model.vms"), "-o", str(staged / "model.vmo")]) == 0
    assert relaxc(["--emit", "kernels", "--target", "llvm", str(staged / "model.vms"), "-o",
                   str(staged / "model.ko")]) == 0
    assert relaxld([str(staged / "model.vmo"), str(staged / "model.ko"), "-o", str(staged / "model.vmx")]) == 0
    return root


def test_staged_build_is_the_one_shot(artifacts):
    assert (artifacts / "staged" / "model.vmx").read_bytes() == (artifacts / "model.vmx").read_bytes()


@pytest.mark.parametrize("lhs_shape, rhs_shape", SHAPES)
def test_relaxrun_broadcasts_at_run_time(artifacts, lhs_shape, rhs_shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(lhs_shape).astype("float32")
    y = rng.standard_normal(rhs_shape).astype("float32")
    np.save(artifacts / "x.npy", x)
    np.save(artifacts / "y.npy", y)
    out = artifacts / "out.npy"
    assert relaxrun([str(artifacts / "staged" / "model.vmx"), "--input", str(artifacts / "x.npy"),
                     "--input", str(artifacts / "y.npy"), "--output", str(out)]) == 0
    result = np.load(out)
    assert result.shape == np.broadcast_shapes(lhs_shape, rhs_shape) and result.dtype == np.float32
    np.testing.assert_allclose(result, np.exp(x) + y, rtol=1e-6)


def test_incompatible_shapes_are_a_runtime_error(artifacts, capsys):
    code = relaxrun([str(artifacts / "model.vmx"), "--input", "2x3xf32=1", "--input", "4xf32=1"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("relaxrun: error: cannot broadcast (2, 3) with (4,) in R.add\nVM backtrace")
    assert "Traceback" not in err


@pytest.mark.parametrize("opt_level", [0, 2])
def test_known_rank_static_operands_and_other_dtypes(opt_level):
    vm = VirtualMachine(build(parse(MIXED, "mixed.relax"), "llvm", opt_level), "cpu")
    x = np.array([[1, -2, 3], [-4, 5, 0.5]], "float32")
    y = np.array([1, 2, 3], "float32")
    z = np.array([[1, 2], [-3, 4]], "int32")
    u = np.array([0.5], "float32")
    b, c, d, e = vm["main"](x, y, z, u, y)
    np.testing.assert_allclose(b, np.clip(np.maximum(x, 0) * y, 0, 2), rtol=1e-6)
    np.testing.assert_array_equal(c, z < 2)
    np.testing.assert_array_equal(d, np.maximum(-z, z))
    np.testing.assert_allclose(e, u - y, rtol=1e-6)
    assert c.dtype == np.bool_ and d.dtype == np.int32
