"""Kernels that differ only in their names and those of their buffer parameters share one
body (relax/codegen/kernel_dedup.py): which ones, the code built for them, their metadata
and messages, and a model end to end."""

import ctypes
import re

import numpy as np
import pytest
from codegen_tir import elementwise, i64, kernel, load, loop, param

from relax.build import build
from relax.codegen import build_host_library
from relax.codegen.build_kernels import emit_llvm_ir
from relax.codegen.kernel_dedup import body_key, identical_kernels
from relax.ir import tir
from relax.runtime.kernels import KernelCallError, abi
from relax.script import parse
from relax.ir.pass_infra import PassContext, get_pass, run_passes
from relax.transform.pipeline import pipeline
from relax.vm import VirtualMachine

TWO_ADDS = """
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, x)
            c = R.add(b, y)
            d = R.multiply(c, a)
            R.output(d)
        return d
"""


def double(name: str = "A", out: str = "C", index: str = "i") -> tir.PrimFunc:
    """C[i] = A[i] + A[i] over 64 float32 elements."""
    a, c = param(name, "float32", (64,)), param(out, "float32", (64,))
    i = tir.Var(index, "int64")
    return kernel([a, c], loop(i, i64(64), tir.BufferStore(c[1], tir.Add(load(a[1], i), load(a[1], i)), (i,))))


def checked(limit: int) -> tir.PrimFunc:
    """Asserts A[i] < limit: a body whose message names its kernel."""
    a = param("A", "int32", (4,))
    i = tir.Var("i", "int64")
    check = tir.AssertStmt(tir.LT(load(a[1], i), tir.IntImm("int32", limit)), tir.StringImm("A too large"),
                           tir.Evaluate(tir.IntImm("int32", 0)))
    return kernel([a], loop(i, i64(4), check))


def impl_bodies(text: str) -> list[str]:
    return re.findall(r"define internal i32 @\"?([A-Za-z0-9_]+)\.impl\"?", text)


def function_text(text: str, symbol: str) -> str:
    start = re.search(rf"define i32 @\"?{symbol}\"?\(", text).start()
    return text[start:text.index("\n}", start)]


# -- which kernels are one body ----------------------------------------------------------


def test_equal_functions_group_under_the_first_name():
    funcs = {"k2": double(), "k1": double(), "k3": double("B")}
    assert identical_kernels(funcs) == {"k2": "k1", "k3": "k1"}


def test_buffer_parameter_names_do_not_count():
    """The transformer's query and key projections take `q_bias` and `k_bias`: one body."""
    assert identical_kernels({"k0": double("A", "C"), "k1": double("X", "Y")}) == {"k1": "k0"}
    a, c = param("A", "float32", (64,)), param("C", "float32", (64,))
    i = tir.Var("i", "int64")
    output_first = kernel([c, a], loop(i, i64(64), tir.BufferStore(c[1], tir.Add(load(a[1], i), load(a[1], i)), (i,))))
    assert body_key(output_first) != body_key(double("A", "C"))  # positions count


def test_functions_that_differ_are_not_grouped():
    mul = elementwise(64, ["float32"], "float32", lambda a: tir.Mul(a, a))
    add = elementwise(64, ["float32"], "float32", lambda a: tir.Add(a, a))
    add16 = elementwise(16, ["float32"], "float32", lambda a: tir.Add(a, a))
    loop_named_j = double(index="j")
    assert identical_kernels({"mul": mul, "add": add, "add16": add16, "d": double(), "e": loop_named_j}) == {}


def test_constants_count_as_written():
    """0.0 and -0.0 compare equal, 1 and 1.0 and True too; as constants they are different code."""
    def plus(constant):
        return elementwise(64, ["float32"], "float32", lambda a: tir.Add(a, constant))

    keys = {body_key(plus(tir.FloatImm("float32", value))) for value in (0.0, -0.0, float("nan"), 1.0)}
    assert len(keys) == 4
    assert body_key(plus(tir.FloatImm("float32", float("nan")))) == body_key(plus(tir.FloatImm("float32", float("nan"))))
    assert identical_kernels({"a": plus(tir.FloatImm("float32", 0.0)), "b": plus(tir.FloatImm("float32", -0.0))}) == {}


def test_shared_nodes_count():
    """A node used twice and two equal nodes are different IR (one load or two): not one body."""
    a, c = param("A", "float32", (64,)), param("C", "float32", (64,))
    i = tir.Var("i", "int64")
    shared = load(a[1], i)
    once = kernel([a, c], loop(i, i64(64), tir.BufferStore(c[1], tir.Add(shared, shared), (i,))))
    twice = kernel([a, c], loop(i, i64(64), tir.BufferStore(c[1], tir.Add(load(a[1], i), load(a[1], i)), (i,))))
    assert body_key(once) != body_key(twice)


def test_source_spans_do_not_count():
    """The same function at two places of a source: equal up to spans."""
    first = parse(TWO_ADDS, "one.relax")
    second = parse("\n\n\n" + TWO_ADDS, "two.relax")
    assert first["main"].span != second["main"].span
    assert body_key(first["main"]) == body_key(second["main"])
    assert body_key(first["main"]) != body_key(parse(TWO_ADDS.replace("R.add(b", "R.subtract(b"), "one.relax")["main"])


# -- the code built ------------------------------------------------------------------------


def test_one_body_and_a_forwarding_entry():
    text = emit_llvm_ir({"k1": double(), "k2": double(), "other": double(index="j")}, optimized=False)
    assert impl_bodies(text) == ["k1", "other"]
    forwarder = function_text(text, "relaxk_k2")
    assert re.search(r"tail call i32 @\"?relaxk_k1\"?\(", forwarder)
    assert ".impl" not in forwarder
    assert "noinline" in text


def test_shared_kernels_compute_under_every_name():
    lib = build_host_library({"k1": double(), "k2": double(), "k3": double()})
    x = np.arange(64, dtype=np.float32)
    for name in ("k1", "k2", "k3"):
        out = np.zeros(64, np.float32)
        lib.get_function(name)(x, out)
        np.testing.assert_array_equal(out, x + x)
    infos = {info.name: info for info in lib.kernel_object.kernels}
    assert [infos[n].symbol for n in ("k1", "k2", "k3")] == ["relaxk_k1", "relaxk_k2", "relaxk_k3"]
    assert infos["k2"].params == infos["k1"].params and infos["k3"].writes == infos["k1"].writes


def test_a_forwarding_kernel_has_its_own_parameter_names():
    lib = build_host_library({"k1": double("A", "C"), "k2": double("X", "Y")})
    assert impl_bodies(emit_llvm_ir({"k1": double("A", "C"), "k2": double("X", "Y")}, optimized=False)) == ["k1"]
    infos = {info.name: info for info in lib.kernel_object.kernels}
    assert [p.name for p in infos["k2"].params] == ["X", "Y"] and infos["k2"].writes == ("Y",)
    assert [p.name for p in infos["k1"].params] == ["A", "C"] and infos["k1"].writes == ("C",)
    x, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    lib.get_function("k2")(x, out)
    np.testing.assert_array_equal(out, x + x)
    with pytest.raises(KernelCallError, match="'X'"):
        lib.get_function("k2")(np.zeros(32, np.float32), out)


def test_a_forwarding_entry_checks_the_call_under_its_own_name():
    lib = build_host_library({"k1": double(), "k2": double()})
    x, out = np.ones(64, np.float32), np.zeros(64, np.float32)
    cfunc = abi.KERNEL_CFUNCTYPE(lib._engine.get_function_address("relaxk_k2"))
    buffers = (ctypes.c_void_p * 2)(x.ctypes.data, out.ctypes.data)
    scalars = (ctypes.c_int64 * 1)()
    context = abi.KernelContext()
    context.abi_version = abi.KERNEL_ABI_VERSION + 1
    assert cfunc(buffers, scalars, ctypes.byref(context)) == abi.BAD_CONTEXT
    assert context.error_message.decode().startswith("k2: the caller's kernel ABI version")
    assert not out.any()


def test_a_body_that_names_its_kernel_is_not_shared():
    text = emit_llvm_ir({"check": checked(10), "check1": checked(10)}, optimized=False)
    assert impl_bodies(text) == ["check", "check1"]
    lib = build_host_library({"check": checked(10), "check1": checked(10)})
    lib.get_function("check1")(np.array([0, 1, 2, 3], np.int32))
    with pytest.raises(KernelCallError, match="assertion failed: check1: A too large"):
        lib.get_function("check1")(np.array([0, 1, 20, 3], np.int32))
    with pytest.raises(KernelCallError, match="assertion failed: check: A too large"):
        lib.get_function("check")(np.array([0, 1, 20, 3], np.int32))


# -- a model -------------------------------------------------------------------------------


def test_a_model_with_repeated_operators_runs_and_shares_bodies():
    """At -O0 the two adds and the two multiplies are kernels add, add1, multiply, multiply1."""
    mod = parse(TWO_ADDS, "two_adds.relax")
    with PassContext(opt_level=0) as context:
        lowered = run_passes(mod, [get_pass(name) for name in pipeline(0)], context)
    kernels = dict(lowered.prim_funcs())
    assert identical_kernels(kernels) == {"add1": "add", "multiply1": "multiply"}
    assert impl_bodies(emit_llvm_ir(kernels, optimized=False)) == ["add", "multiply"]
    exe = build(mod, "llvm", opt_level=0)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 8), np.float32), rng.standard_normal((4, 8), np.float32)
    result = np.asarray(VirtualMachine(exe, "cpu")["main"](x, y))
    a = x + y
    np.testing.assert_allclose(result, ((a * x) + y) * a, rtol=1e-6)
