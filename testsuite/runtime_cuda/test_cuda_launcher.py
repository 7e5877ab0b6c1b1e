"""The cuda launcher's pure part (no GPU): sizes bound from shapes, launches evaluated, arguments typed."""

from types import SimpleNamespace

import numpy as np
import pytest

from relax.runtime.cuda.launcher import CudaKernel, CudaKernelError, plan_launches
from relax.runtime.kernels.metadata import ParamInfo


def launch(symbol, grid, block, shared=0):
    return SimpleNamespace(symbol=symbol, grid=grid, block=block, shared_bytes=shared)


def scale_info(launches):
    """relaxk_scale(float* A, float* B, float alpha, int64 n): B = A * alpha over n elements."""
    return SimpleNamespace(
        name="scale",
        params=(ParamInfo("A", "buffer", "float32", ("n",)), ParamInfo("B", "buffer", "float32", ("n",)),
                ParamInfo("alpha", "scalar", "float32")),
        symbolic_vars=("n",),
        launches=launches,
    )


CEIL_256 = ["floordiv", ["add", "n", 255], 256]


def test_grid_from_symbolic_size_and_typed_arguments():
    info = scale_info((launch("relaxk_scale", [CEIL_256, 1, 1], [256, 1, 1]),))
    a, b = np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    [(symbol, grid, block, shared, args)] = plan_launches(info, (a, b, 2.5))
    assert (symbol, grid, block, shared) == ("relaxk_scale", (4, 1, 1), (256, 1, 1), 0)
    assert args[0] is a and args[1] is b
    assert type(args[2]) is np.float32 and args[2] == np.float32(2.5)
    assert type(args[3]) is np.int64 and args[3] == 1000


def test_several_launches_in_order_with_shared_memory():
    info = scale_info((launch("relaxk_scale_0", ["n", 1, 1], [32, 1, 1], ["mul", 32, 4]),
                       launch("relaxk_scale_1", [1, 1, 1], [["min", "n", 1024], 1, 1])))
    plan = plan_launches(info, (np.zeros(3, np.float32), np.zeros(3, np.float32), 1))
    assert [(p[0], p[1], p[2], p[3]) for p in plan] == [
        ("relaxk_scale_0", (3, 1, 1), (32, 1, 1), 128), ("relaxk_scale_1", (1, 1, 1), (3, 1, 1), 0)]


def test_empty_tensor_launches_nothing():
    info = scale_info((launch("relaxk_scale", [CEIL_256, 1, 1], [256, 1, 1]),))
    assert plan_launches(info, (np.zeros(0, np.float32), np.zeros(0, np.float32), 1.0)) == []


def test_scalar_types_follow_the_c_signature():
    info = SimpleNamespace(name="k", symbolic_vars=(), launches=(launch("relaxk_k", [1, 1, 1], [1, 1, 1]),),
                           params=tuple(ParamInfo(f"p{i}", "scalar", d) for i, d in
                                        enumerate(("int32", "int64", "float16", "float64", "bool"))))
    [(_, _, _, _, args)] = plan_launches(info, (3, np.int64(4), 0.5, 1.25, True))
    assert [type(a) for a in args] == [np.int32, np.int64, np.float16, np.float64, np.int8]


@pytest.mark.parametrize("args,message", [
    ((np.zeros(4, np.float64), np.zeros(4, np.float32), 1.0), "parameter 'A' expects dtype float32, got float64"),
    ((np.zeros(4, np.float32), np.zeros(5, np.float32), 1.0), r"parameter 'B' dimension 0 must be n = 4"),
    ((np.zeros((2, 2), np.float32), np.zeros(4, np.float32), 1.0), "parameter 'A' expects 1 dimensions"),
    ((np.zeros(4, np.float32), np.zeros(4, np.float32)), "takes 3 arguments"),
    ((np.zeros(4, np.float32), np.zeros(4, np.float32), "x"), "parameter 'alpha' expects a float32 scalar"),
    ((np.zeros(8, np.float32)[::2], np.zeros(4, np.float32), 1.0), "must be a C-contiguous"),
])
def test_bad_arguments_are_named(args, message):
    info = scale_info((launch("relaxk_scale", [CEIL_256, 1, 1], [256, 1, 1]),))
    with pytest.raises(CudaKernelError, match=message):
        plan_launches(info, args)


def test_kernel_without_launches_is_refused():
    with pytest.raises(CudaKernelError, match="has no launch dimensions"):
        plan_launches(scale_info(()), (np.zeros(1, np.float32), np.zeros(1, np.float32), 1.0))


def test_unbound_size_in_a_launch_is_reported():
    info = scale_info((launch("relaxk_scale", ["m", 1, 1], [1, 1, 1]),))
    with pytest.raises(CudaKernelError, match="cannot compute the launch of 'relaxk_scale'"):
        plan_launches(info, (np.zeros(1, np.float32), np.zeros(1, np.float32), 1.0))


def test_host_arrays_are_refused_before_any_launch():
    calls = []
    kernel = CudaKernel(scale_info((launch("relaxk_scale", [1, 1, 1], [1, 1, 1]),)),
                        {"relaxk_scale": lambda *a, **k: calls.append(a)})
    with pytest.raises(CudaKernelError, match="expects a tensor on the GPU, got ndarray"):
        kernel(np.zeros(1, np.float32), np.zeros(1, np.float32), 1.0)
    assert calls == []


class FakeDeviceArray(np.ndarray):
    """A numpy array that says it is on a GPU, to drive CudaKernel without one."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (0, False), "version": 3}


def test_kernel_launches_each_symbol_with_its_dimensions():
    calls = []

    def function(symbol):
        return lambda grid, block, args, shared_mem=0: calls.append((symbol, grid, block, shared_mem, len(args)))

    info = scale_info((launch("relaxk_scale_0", [CEIL_256, 1, 1], [256, 1, 1]),
                       launch("relaxk_scale_1", [1, 1, 1], [32, 1, 1], 64)))
    kernel = CudaKernel(info, {"relaxk_scale_0": function("relaxk_scale_0"),
                               "relaxk_scale_1": function("relaxk_scale_1")})
    a = np.zeros(600, np.float32).view(FakeDeviceArray)
    kernel(a, a.copy(), 1.0)
    assert calls == [("relaxk_scale_0", (3, 1, 1), (256, 1, 1), 0, 4), ("relaxk_scale_1", (1, 1, 1), (32, 1, 1), 64, 4)]


def test_a_failed_launch_names_the_symbol():
    def broken(grid, block, args, shared_mem=0):
        raise RuntimeError("CUDA_ERROR_INVALID_VALUE")

    kernel = CudaKernel(scale_info((launch("relaxk_scale", [1, 1, 1], [2048, 1, 1]),)), {"relaxk_scale": broken})
    a = np.zeros(4, np.float32).view(FakeDeviceArray)
    with pytest.raises(CudaKernelError, match=r"launch of 'relaxk_scale' \(grid \(1, 1, 1\), block \(2048, 1, 1\)\)"):
        kernel(a, a.copy(), 1.0)


def test_launch_dimensions_may_use_integer_scalars():
    info = SimpleNamespace(name="fill", symbolic_vars=("n",),
                           params=(ParamInfo("A", "buffer", "float32", ("n",)), ParamInfo("rows", "scalar", "int32")),
                           launches=(launch("relaxk_fill", [["mul", "rows", 2], 1, 1], ["n", 1, 1]),))
    [(_, grid, block, _, args)] = plan_launches(info, (np.zeros(7, np.float32), 5))
    assert grid == (10, 1, 1) and block == (7, 1, 1) and type(args[1]) is np.int32


def test_workspace_is_sized_from_the_shapes_and_passed_last():
    calls, allocations = [], []

    def allocate(nbytes):
        allocations.append(nbytes)
        return np.zeros(nbytes, np.uint8).view(FakeDeviceArray)

    info = scale_info((launch("relaxk_scale_0", ["n", 1, 1], [1, 1, 1]), launch("relaxk_scale_1", [1, 1, 1], [1, 1, 1])))
    info.workspace_bytes = ["mul", "n", 4]
    kernel = CudaKernel(info, {s: (lambda grid, block, args, shared_mem=0: calls.append(args))
                               for s in ("relaxk_scale_0", "relaxk_scale_1")}, allocate)
    a = np.zeros(1000, np.float32).view(FakeDeviceArray)
    kernel(a, a.copy(), 1.0)
    kernel(a[:10], a[:10].copy(), 1.0)  # smaller: the same workspace again
    assert allocations == [4000]
    assert all(len(args) == 5 and args[4].nbytes == 4000 for args in calls)
    assert calls[0][4] is calls[1][4]


def test_large_dynamic_shared_memory_is_allowed_before_the_launch():
    class Function:
        max_dynamic_shared_size_bytes = 0

        def __call__(self, grid, block, args, shared_mem=0):
            assert self.max_dynamic_shared_size_bytes >= shared_mem
            self.launched = shared_mem

    function = Function()
    kernel = CudaKernel(scale_info((launch("relaxk_scale", [1, 1, 1], [1, 1, 1], 100 * 1024),)),
                        {"relaxk_scale": function})
    a = np.zeros(4, np.float32).view(FakeDeviceArray)
    kernel(a, a.copy(), 1.0)
    assert function.max_dynamic_shared_size_bytes == function.launched == 100 * 1024


def copy_info():
    """relaxk_copy(float* A, float* B, int64 n): buffers only, so its plans are remembered."""
    return SimpleNamespace(name="copy", symbolic_vars=("n",),
                           params=(ParamInfo("A", "buffer", "float32", ("n",)), ParamInfo("B", "buffer", "float32", ("n",))),
                           launches=(launch("relaxk_copy", [CEIL_256, 1, 1], [256, 1, 1]),))


def test_a_layout_seen_before_reuses_its_plan(monkeypatch):
    from relax.runtime.cuda import launcher

    binds, calls = [], []
    real_bind = launcher.bind_launches
    monkeypatch.setattr(launcher, "bind_launches", lambda info, args: binds.append(1) or real_bind(info, args))
    kernel = CudaKernel(copy_info(), {"relaxk_copy": lambda grid, block, args, shared_mem=0: calls.append((grid, args))})
    a, b = (np.zeros(1000, np.float32).view(FakeDeviceArray) for _ in range(2))
    kernel(a, b)
    kernel(b, a)  # other arrays, the same layout: no new plan, these arrays passed
    assert len(binds) == 1
    assert [grid for grid, _ in calls] == [(4, 1, 1), (4, 1, 1)]
    assert calls[1][1][0] is b and calls[1][1][1] is a and calls[1][1][2] == 1000
    small = np.zeros(300, np.float32).view(FakeDeviceArray)
    kernel(small, small.copy())  # a new shape: a new plan, its own sizes
    assert len(binds) == 2 and calls[-1][0] == (2, 1, 1) and calls[-1][1][2] == 300


@pytest.mark.parametrize("bad, message", [
    (lambda a: np.zeros(1000, np.float32), "expects a tensor on the GPU"),
    (lambda a: np.zeros(1000, np.float64).view(FakeDeviceArray), "expects dtype float32"),
    (lambda a: np.zeros(2000, np.float32).view(FakeDeviceArray)[::2], "C-contiguous"),
    (lambda a: np.zeros(999, np.float32).view(FakeDeviceArray), "dimension 0 must be n = 1000"),
])
def test_a_remembered_plan_still_refuses_bad_arguments(bad, message):
    kernel = CudaKernel(copy_info(), {"relaxk_copy": lambda grid, block, args, shared_mem=0: None})
    a = np.zeros(1000, np.float32).view(FakeDeviceArray)
    kernel(a, a.copy())
    with pytest.raises(CudaKernelError, match=message):
        kernel(a, bad(a))
