"""R.inspect.*, R.memory.view / ensure_zero_offset and R.call_inplace_packed: struct
info, located errors, the runtime builtins they lower to, and an in-place packed call
run end to end through the Python API."""

import numpy as np
import pytest

from relax import ir
from relax.build import build
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of
from relax.runtime import tensor_inspect
from relax.runtime.errors import VMError
from relax.runtime.objects import ShapeTuple
from relax.runtime.registry import register_func, remove_global_func
from relax.script import parse
from relax.vm import VirtualMachine

N = tir.Var("n", "int64")


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def prim(value, dtype="int64"):
    return ir.PrimValue(tir.IntImm(dtype, value))


def call(op, *args, sinfo=(), **attrs):
    return ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs), tuple(sinfo))


def test_inspect_results_have_the_dltensor_field_types():
    x = tensor((N, 4))
    kinds = {"dtype_code": "uint8", "dtype_bits": "uint8", "dtype_lanes": "uint16", "ndim": "int32",
             "byte_offset": "uint64", "elem_offset": "uint64"}
    for field, dtype in kinds.items():
        info = struct_info_of(call(f"inspect.tensor_{field}", x))
        assert isinstance(info, ir.PrimStructInfo) and info.dtype == dtype
    assert struct_info_of(call("inspect.tensor_shape_i", x, prim(1))).dtype == "int64"
    with pytest.raises(DiagnosticError, match=r"axis 2 is out of range for a tensor of rank 2 in "
                                              r"R.inspect.tensor_stride_i"):
        struct_info_of(call("inspect.tensor_stride_i", x, prim(2)))


def test_view_struct_info_and_errors():
    x = tensor((N, 4))
    same = struct_info_of(call("memory.view", x))
    assert same.shape is x.struct_info.shape and same.dtype == "float32"
    info = struct_info_of(call("memory.view", x, ir.ShapeExpr((N * 2, tir.IntImm("int64", 2))),
                               ir.DataTypeImm("int32")))
    assert info.dtype == "int32" and info.ndim == 2
    with pytest.raises(DiagnosticError, match="a view of 36 bytes at byte offset 4 reaches past the 32 bytes"):
        struct_info_of(call("memory.view", tensor((2, 4)), ir.ShapeExpr((tir.IntImm("int64", 9),)),
                            ir.Tuple(()), prim(4)))
    with pytest.raises(DiagnosticError, match="the shape must be a shape value"):
        struct_info_of(call("memory.view", x, prim(3)))
    # found by `make fuzz`: the -1 got through to the lowered text, which refused it (an internal error)
    with pytest.raises(DiagnosticError, match="a view's shape may not have a negative dimension, got -1"):
        struct_info_of(call("memory.view", x, ir.ShapeExpr((tir.IntImm("int64", -1),)), ir.DataTypeImm("int32")))


def test_view_builtin_tracks_offsets_and_bounds():
    x = np.arange(6, dtype="float32")
    view = tensor_inspect.create_view(x, ShapeTuple([2]), "int32", 8)
    assert view.tolist() == x[2:4].view("int32").tolist()
    assert tensor_inspect.tensor_byte_offset(view) == 8 and tensor_inspect.tensor_elem_offset(view) == 2
    nested = tensor_inspect.create_view(view, ShapeTuple([1]), (), 4)  # the dtype as the source's
    assert tensor_inspect.tensor_byte_offset(nested) == 12 and nested.dtype == np.int32
    copy = tensor_inspect.ensure_zero_offset(view)
    assert copy is not view and tensor_inspect.tensor_byte_offset(copy) == 0
    assert tensor_inspect.ensure_zero_offset(x) is x
    with pytest.raises(VMError, match="does not fit in the 24 bytes"):
        tensor_inspect.create_view(x, ShapeTuple([4]), (), 12)
    flags = np.zeros(3, bool)  # TVM 0.27 holds bool as DLPack's kDLBool in 8 bits
    assert [tensor_inspect.tensor_dtype_code(flags), tensor_inspect.tensor_dtype_bits(flags)] == [6, 8]
    with pytest.raises(VMError, match="axis may not be larger"):
        tensor_inspect.tensor_shape_i(x, 1)


INPLACE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        y: R.Tensor((2, 3), dtype="float32") = R.add(x, x)
        z: R.Tensor((2, 3), dtype="float32") = R.call_inplace_packed("test.add_in_place", y, R.prim_value(2.0), inplace_indices=[0], ty_args=(R.Tensor((2, 3), dtype="float32"),))
        return z
'''


def test_call_inplace_packed_runs_the_packed_function():
    def add_in_place(tensor, value):
        tensor += value
        return tensor

    register_func("test.add_in_place", add_in_place, override=True)
    try:
        vm = VirtualMachine(build(parse(INPLACE), "llvm"), "cpu")
        np.testing.assert_array_equal(vm["main"](np.ones((2, 3), "float32")), np.full((2, 3), 4.0, "float32"))
    finally:
        remove_global_func("test.add_in_place")


def test_call_inplace_packed_checks_its_indices():
    x = tensor((2, 3))
    out = x.struct_info
    assert struct_info_of(call("call_inplace_packed", ir.ExternFunc("f"), x, sinfo=[out], inplace_indices=(0,))) is out
    with pytest.raises(DiagnosticError, match="in-place index 1 is out of range for 1 arguments"):
        struct_info_of(call("call_inplace_packed", ir.ExternFunc("f"), x, sinfo=[out], inplace_indices=(1,)))
    with pytest.raises(DiagnosticError, match="output 0 must have the struct info of argument 0"):
        struct_info_of(call("call_inplace_packed", ir.ExternFunc("f"), x, sinfo=[tensor((3,)).struct_info],
                            inplace_indices=(0,)))
    with pytest.raises(DiagnosticError, match="at least one index must not be -1"):
        struct_info_of(call("call_inplace_packed", ir.ExternFunc("f"), x, sinfo=[out], inplace_indices=(-1,)))
