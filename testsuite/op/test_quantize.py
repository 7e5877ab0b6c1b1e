"""R.quantize and R.dequantize: inference and kernels against numpy."""

import numpy as np
import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

from numeric import run_op


def tensor(name, dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var(name, ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def call(op, *args, **attrs):
    return ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs))


X = np.array([[-70.0, -1.25, 0.0], [0.75, 3.0, 90.0]], "float32")


def test_quantize_per_tensor_and_per_channel():
    got = run_op("quantize", X, np.array(0.5, "float32"), np.array(1, "int8"), axis=1, out_dtype="int8")
    np.testing.assert_array_equal(got, np.clip(np.round(X / 0.5) + 1, -128, 127).astype("int8"))
    scale, zero = np.array([0.5, 0.25, 2.0], "float32"), np.array([0, 10, 200], "uint8")
    got = run_op("quantize", X, scale, zero, axis=1, out_dtype="uint8")
    np.testing.assert_array_equal(got, np.clip(np.round(X / scale) + zero, 0, 255).astype("uint8"))


def test_dequantize():
    q = np.array([[-128, -3, 0], [5, 17, 127]], "int8")
    scale, zero = np.array([0.5, 0.25], "float32"), np.array([1, -2], "int8")
    got = run_op("dequantize", q, scale, zero, axis=0)
    expected = (q.astype("int32") - zero[:, None].astype("int32")).astype("float32") * scale[:, None]
    np.testing.assert_array_equal(got, expected)
    half = run_op("dequantize", q, np.array(1000.0, "float32"), np.array(0, "int8"), out_dtype="float16")
    np.testing.assert_array_equal(half, np.clip(q.astype("float32") * 1000, -65504, 65504).astype("float16"))


def test_quantize_inference_and_errors():
    n = tir.Var("n", "int64")
    info = struct_info_of(call("quantize", tensor("x", (n, 3)), tensor("s", (3,)), tensor("z", (), "int8"),
                               axis=-1, out_dtype="int8"))
    assert info.dtype == "int8" and info.shape_values[0] is n
    with pytest.raises(DiagnosticError, match=r"scale of shape \(4,\) does not match axis 1 of \(2, 3\)"):
        struct_info_of(call("quantize", tensor("x", (2, 3)), tensor("s", (4,)), tensor("z", (), "int8"),
                            axis=1, out_dtype="int8"))
    with pytest.raises(DiagnosticError, match="data must be an integer tensor, got float32 in R.dequantize"):
        struct_info_of(call("dequantize", tensor("x", (2,)), tensor("s", ()), tensor("z", (), "int8"),
                            axis=-1, out_dtype="float32"))
