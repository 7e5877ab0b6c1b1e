"""Fusion in the -O2 pipeline: fewer kernels, the same numbers, well-formed IR."""

import pathlib

import numpy as np
import pytest

from relax.build import build, lower
from relax.driver.compile import parse_source
from relax.ir import check_well_formed
from relax.script import parse, script
from relax.ir.pass_infra import PassContext, run_passes
from relax.runtime.objects import ShapeTuple
from relax.vm import VirtualMachine

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
FUSION = ["normalize", "legalize-ops", "annotate-tir-op-pattern", "fuse-ops", "fuse-tir"]


def kernels(name: str, opt_level: int) -> list[str]:
    return sorted(lower(parse_source(str(SAMPLES / f"{name}.relax")), opt_level).prim_funcs())


def test_mlp_layers_fuse_into_one_kernel_each():
    assert len(kernels("mlp", 0)) == 11
    assert kernels("mlp", 2) == [
        "fused_matmul1_add1_relu1", "fused_matmul2_add2", "fused_matmul_add_relu",
        "transpose", "transpose1", "transpose2",
    ]


def test_cnn_convolution_takes_its_bias_and_relu():
    fused = kernels("cnn", 2)
    assert "fused_conv2d_add_relu" in fused and "fused_matmul_add1" in fused
    assert "conv2d" not in fused and "relu" not in fused
    assert len(fused) < len(kernels("cnn", 0))


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "tuples", "scalars", "manipulation", "dynamic_batch"])
def test_fused_modules_are_well_formed_and_print_back(name):
    mod = parse_source(str(SAMPLES / f"{name}.relax"))
    for upto in range(3, len(FUSION) + 1):
        fused = run_passes(mod, FUSION[:upto])
        assert [d.message for d in check_well_formed(fused) if d.severity == "error"] == []
        # Printed, parsed and printed again, the text stays the same (the first
        # print may still hold arithmetic the parser folds, as in legalized conv2d).
        text = script(parse(script(fused)))
        assert script(parse(text)) == text


CHAIN_WITH_CONSTANT = """
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 3), dtype="float32"), y: R.Tensor((3,), dtype="float32")) -> R.Tensor((4, 3), dtype="float32"):
        with R.dataflow():
            a = R.exp(x)
            b = R.add(a, y)
            c = R.multiply(b, R.const(2.0, "float32"))
            R.output(c)
        return c
"""


def test_elementwise_chain_with_a_constant_is_one_kernel_and_computes_the_same():
    mod = parse(CHAIN_WITH_CONSTANT)
    grouped = run_passes(mod, FUSION[:4])
    (primitive,) = [f for f in grouped.relax_functions().values() if f.attrs.get("Primitive")]
    assert [p.name_hint for p in primitive.params] == ["x", "y", "param_0"]  # the constant is lifted
    fused = run_passes(mod, FUSION)
    assert sorted(fused.prim_funcs()) == ["fused_exp_add_multiply"]
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 3)).astype("float32"), rng.standard_normal(3).astype("float32")
    out = VirtualMachine(build(mod, "llvm", 2), "cpu")["main"](x, y)
    np.testing.assert_allclose(out, (np.exp(x) + y) * 2, rtol=1e-5)


SCALAR_ARGUMENTS = """
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fill(x: T.handle, v: T.float32, k: T.int64, y: T.handle):
        n = T.int64()
        A = T.match_buffer(x, (n,), "float32")
        B = T.match_buffer(y, (n + k,), "float32")
        for i in range(n + k):
            with T.sblock("B"):
                vi = T.axis.spatial(n + k, i)
                B[vi] = T.if_then_else(vi < n, A[vi], v)

    @R.function
    def main(x: R.Tensor(("n",), dtype="float32"), s: R.Shape(["k"])) -> R.Tensor(("n + k",), dtype="float32"):
        n = T.int64()
        k = T.int64()
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.fill, (x, R.prim_value(T.float32(1.5)), R.prim_value(k)), out_sinfo=R.Tensor((n + k,), dtype="float32"))
            z = R.exp(y)
            R.output(z)
        return z
"""


def test_scalar_arguments_and_a_size_only_an_output_has_reach_the_fused_kernel():
    mod = parse(SCALAR_ARGUMENTS)
    fused = run_passes(mod, FUSION)
    kernel = fused["fused_fill_exp"]
    assert [p.name for p in kernel.params] == ["x", "T_exp_intermediate", "k"]  # k: a scalar parameter
    vm = VirtualMachine(build(mod, "llvm", 2), "cpu")
    x = np.arange(3, dtype="float32")
    out = vm["main"](x, ShapeTuple([2]))
    np.testing.assert_allclose(out, np.exp(np.array([0, 1, 2, 1.5, 1.5], "float32")), rtol=1e-6)


@pytest.mark.parametrize("depth", [2, 5])
def test_max_depth_bounds_every_group(depth):
    mod = parse_source(str(SAMPLES / "elementwise.relax"))
    with PassContext(config={"relax.FuseOps.max_depth": depth}):
        grouped = run_passes(mod, FUSION[:4])
    sizes = [len(f.body.blocks[0].bindings) for f in grouped.relax_functions().values() if f.attrs.get("Primitive")]
    assert len(sizes) > 1 and max(sizes) <= depth


SAME_KERNEL_TWICE = """
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def double(A: T.Buffer((T.int64(4),), "float32"), B: T.Buffer((T.int64(4),), "float32")):
        T_tmp = T.sblock_alloc_buffer((T.int64(4),))
        for i in range(T.int64(4)):
            with T.sblock("tmp"):
                vi = T.axis.spatial(T.int64(4), i)
                T_tmp[vi] = A[vi] + A[vi]
        for i in range(T.int64(4)):
            with T.sblock("B"):
                vi = T.axis.spatial(T.int64(4), i)
                B[vi] = T_tmp[vi]

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            a = R.call_tir(cls.double, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            b = R.call_tir(cls.double, (a,), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(b)
        return b
"""


def test_one_kernel_called_twice_in_a_group_gets_fresh_loops_buffers_and_block_names():
    mod = parse(SAME_KERNEL_TWICE)
    kernel = run_passes(mod, ["normalize", *FUSION[2:]])["fused_double_double"]
    text = script(kernel)
    assert 'T.sblock("tmp_1")' in text and 'T.sblock("B_1")' in text
    assert [d.message for d in check_well_formed(kernel) if d.severity == "error"] == []
    out = VirtualMachine(build(mod, "llvm", 2), "cpu")["main"](np.arange(4, dtype="float32"))
    np.testing.assert_array_equal(out, np.arange(4, dtype="float32") * 4)
