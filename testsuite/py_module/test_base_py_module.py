"""relax.BasePyModule: a module with Python functions, built once and run just in time.
numpy is the oracle (float32, atol 1e-5); the module is built once for the file."""

import sys

import numpy as np
import pytest

import relax
from relax.diagnostics import UserError
from relax.runtime import register_func, remove_global_func
from relax.script import R, parse

SOURCE = '''
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T

@I.ir_module
class Module(BasePyModule):
    @T.prim_func
    def matmul(var_A: T.handle, var_B: T.handle, var_C: T.handle):
        n = T.int64()
        A = T.match_buffer(var_A, (n, 16), "float32")
        B = T.match_buffer(var_B, (16, 20), "float32")
        C = T.match_buffer(var_C, (n, 20), "float32")
        for i, j, k in T.grid(n, 20, 16):
            with T.block("block"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @R.function
    def double(x: R.Tensor(("n", 20), "float32")) -> R.Tensor(("n", 20), "float32"):
        return R.add(x, x)

    @I.py_func
    def main(self, x, w):
        n = x.shape[0]
        lv = self.call_tir(self.matmul, [x, w], out_sinfo=R.Tensor((n, 20), "float32"))
        lv1 = self.relu(lv)
        lv2 = self.call_dps_packed("test.add_one", [lv1], out_sinfo=R.Tensor((n, 20), "float32"))
        return self.double(lv2)

    @I.py_func
    def relu(self, x):
        return np.maximum(x, 0)

    @I.py_func
    def symbolic(self, x, w):
        return self.call_tir("matmul", [x, w], out_sinfo=R.Tensor(("n", 20), "float32"))
'''


def _add_one(x, out):
    out[...] = x + np.float32(1)


@pytest.fixture(scope="module")
def module():
    register_func("test.add_one", _add_one, override=True)
    yield relax.BasePyModule(parse(SOURCE, "py_module.relax"), device="cpu")
    remove_global_func("test.add_one")


def _inputs(batch):
    rng = np.random.default_rng(batch)
    return rng.standard_normal((batch, 16), dtype=np.float32), rng.standard_normal((16, 20), dtype=np.float32)


def _expected(x, w):
    return (np.maximum(x @ w, 0) + 1) * 2


@pytest.mark.parametrize("batch", [1, 3])
def test_python_main_mixes_call_tir_numpy_call_dps_packed_and_a_relax_function(module, batch):
    x, w = _inputs(batch)
    np.testing.assert_allclose(module.main(x, w), _expected(x, w), atol=1e-5)


def test_call_tir_binds_symbolic_sizes_from_the_arguments(module):
    x, w = _inputs(5)
    np.testing.assert_allclose(module.symbolic(x, w), x @ w, atol=1e-5)


def test_every_function_is_an_attribute(module):
    x, w = _inputs(2)
    np.testing.assert_allclose(module.double(x @ w), 2 * (x @ w), atol=1e-5)  # Relax, on the VM
    out = np.zeros((2, 20), "float32")
    module.matmul(x, w, out)  # a TIR function directly: destination-passing
    np.testing.assert_allclose(out, x @ w, atol=1e-5)
    assert module.call_py_func("relu", [np.float32([-1, 2])]).tolist() == [0, 2]
    assert "@I.py_func" in module.script() and "class Module(BasePyModule):" in module.script()


def test_wrong_out_sinfo_is_a_user_error(module):
    x, w = _inputs(2)
    with pytest.raises(UserError, match=r"call_tir\(matmul\): out_sinfo of output 0 \('C'\) has shape \(2, 10\); "
                                        r"the kernel expects \(n, 20\)"):
        module.call_tir(module.matmul, [x, w], out_sinfo=R.Tensor((2, 10), "float32"))
    with pytest.raises(UserError, match="the size 'm' is not bound by the arguments"):
        module.call_tir(module.matmul, [x, w], out_sinfo=R.Tensor(("m", 20), "float32"))
    with pytest.raises(UserError, match="takes 3 parameters; got 2 inputs and 2 output"):
        module.call_tir(module.matmul, [x, w], out_sinfo=[R.Tensor((2, 20), "float32")] * 2)


def test_tir_function_given_a_wrong_shape_is_a_user_error(module):
    w = _inputs(2)[1]
    with pytest.raises(UserError, match=r"argument 0 \('A'\) has shape \(2, 8\); the kernel expects \(n, 16\)"):
        module.call_tir(module.matmul, [np.zeros((2, 8), "float32"), w], out_sinfo=R.Tensor((2, 20), "float32"))
    with pytest.raises(UserError, match="has dtype float64, the kernel expects float32"):
        module.call_tir(module.matmul, [np.zeros((2, 16)), w], out_sinfo=R.Tensor((2, 20), "float32"))


def test_unknown_packed_function_and_unknown_names_are_user_errors(module):
    x = np.zeros((2, 20), "float32")
    with pytest.raises(UserError, match="no function 'test.missing' is registered"):
        module.call_dps_packed("test.missing", [x], out_sinfo=R.Tensor((2, 20), "float32"))
    with pytest.raises(UserError, match=r"'double' is not a TIR function of the module \(TIR functions: matmul\)"):
        module.call_tir("double", [x], out_sinfo=R.Tensor((2, 20), "float32"))
    with pytest.raises(UserError, match="no Python function 'nope'"):
        module.call_py_func("nope", [x])


def test_a_module_on_another_device_is_refused():
    with pytest.raises(UserError, match="runs on the CPU"):
        relax.BasePyModule(parse(SOURCE), device="cuda")


class Wrapped:
    """An array of a framework other than numpy that speaks DLPack (this module is its
    framework: it has from_dlpack, as torch and cupy do)."""

    def __init__(self, array):
        self.array = array
        self.shape = array.shape

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __array__(self, dtype=None, copy=None):  # numpy functions take it, as they take torch tensors
        return self.array


def from_dlpack(value):
    return Wrapped(np.from_dlpack(value))


def test_dlpack_arrays_come_back_in_the_callers_framework(module):
    assert sys.modules[Wrapped.__module__].from_dlpack is from_dlpack
    x, w = _inputs(2)
    got = module.main(Wrapped(x), Wrapped(w))
    assert isinstance(got, Wrapped)
    np.testing.assert_allclose(got.array, _expected(x, w), atol=1e-5)
    product = module.call_tir(module.matmul, [Wrapped(x), w], out_sinfo=R.Tensor((2, 20), "float32"))
    assert isinstance(product, Wrapped)


def test_torch_tensors_in_torch_tensors_out(module):
    torch = pytest.importorskip("torch")
    x, w = _inputs(3)
    got = module.main(torch.from_numpy(x), torch.from_numpy(w))
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), _expected(x, w), atol=1e-5)
