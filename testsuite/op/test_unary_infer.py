"""Struct-info inference and attribute checks of unary operators and activations."""

import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of
from relax.op.registry import get


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def call(op, *args, **attrs):
    return ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs))


def test_unary_keeps_shape_and_dtype_symbolic():
    n = tir.Var("n", "int64")
    info = struct_info_of(call("exp", tensor((n, 3))))
    assert info.shape_values[0] is n and info.dtype == "float32"


def test_predicate_gives_bool():
    assert struct_info_of(call("isnan", tensor((2,)))).dtype == "bool"


def test_float_only_operator_refuses_integers():
    with pytest.raises(DiagnosticError, match="must be a floating-point tensor, got int32 in R.exp"):
        struct_info_of(call("exp", tensor((2,), "int32")))


def test_activation_attributes_default_and_check():
    info = struct_info_of(call("nn.leakyrelu", tensor((2,))))
    assert info.dtype == "float32"
    with pytest.raises(DiagnosticError, match="bad value 'x' for 'alpha'"):
        struct_info_of(call("nn.leakyrelu", tensor((2,)), alpha="x"))
    with pytest.raises(DiagnosticError, match="has no attribute 'beta'"):
        struct_info_of(call("nn.relu", tensor((2,)), beta=1))


def test_clip_attributes_given_positionally():
    x = tensor((3,))
    clip = ir.Call(ir.Op("relax.clip"), (x, ir.PrimValue(tir.FloatImm("float64", 0.0)),
                                         ir.PrimValue(tir.FloatImm("float64", 6.0))))
    assert struct_info_of(clip).dtype == "float32"


def test_every_registered_operator_has_a_known_pattern_and_signature():
    for name in ("relax.add", "relax.exp", "relax.nn.gelu", "relax.clip"):
        op = get(name)
        assert op.signature().startswith(op.script_name + "(")


def test_importing_one_family_first_still_loads_all():
    import subprocess
    import sys

    code = ("import relax.op.manipulation\n"
            "from relax.op.registry import get\n"
            "assert get('relax.sort') is not None and get('relax.nn.conv2d') is not None\n")
    subprocess.run([sys.executable, "-c", code], check=True)
