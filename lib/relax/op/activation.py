"""Elementwise activations of R.nn: relu, leakyrelu, relu6, gelu, gelu_tanh, silu,
softplus. Each is a formula over one element, legalized like the unary operators."""

from __future__ import annotations

import math

from ..ir import tir
from .registry import AttrSpec, OpDef, register
from .unary import constant, elementwise_infer, elementwise_legalize, intrinsic


def _relu(x):
    return tir.Max(x, constant(0, x))


def _leakyrelu(x, alpha):
    return tir.Select(tir.LT(constant(0, x), x), x, tir.Mul(x, constant(alpha, x)))


def _relu6(x):
    return tir.Min(tir.Max(x, constant(0, x)), constant(6, x))


def _gelu(x):
    # 0.5 * x * (1 + erf(x / sqrt(2)))
    half, one = constant(0.5, x), constant(1, x)
    scaled = tir.Mul(x, constant(1 / math.sqrt(2), x))
    return tir.Mul(tir.Mul(half, x), tir.Add(one, intrinsic("erf")(scaled)))


def _gelu_tanh(x):
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    half, one = constant(0.5, x), constant(1, x)
    cube = tir.Mul(tir.Mul(x, x), x)
    inner = tir.Mul(constant(math.sqrt(2 / math.pi), x), tir.Add(x, tir.Mul(constant(0.044715, x), cube)))
    return tir.Mul(tir.Mul(half, x), tir.Add(one, intrinsic("tanh")(inner)))


def _silu(x):
    return tir.Mul(x, intrinsic("sigmoid")(x))


def _softplus(x, beta, threshold):
    # log(1 + exp(beta x)) / beta, and x itself once beta x passes the threshold.
    scaled = tir.Mul(x, constant(beta, x))
    soft = tir.Div(intrinsic("log")(tir.Add(constant(1, x), intrinsic("exp")(scaled))), constant(beta, x))
    return tir.Select(tir.LT(constant(threshold, x), scaled), x, soft)


def _number(value) -> str | None:
    return None if isinstance(value, (int, float)) and not isinstance(value, bool) else "expected a number"


ACTIVATIONS = (
    ("relu", _relu, (), "any"),
    ("leakyrelu", _leakyrelu, (AttrSpec("alpha", 0.01, _number),), "float"),
    ("relu6", _relu6, (), "any"),
    ("gelu", _gelu, (), "float"),
    ("gelu_tanh", _gelu_tanh, (), "float"),
    ("silu", _silu, (), "float"),
    ("softplus", _softplus, (AttrSpec("beta", 1.0, _number), AttrSpec("threshold", 20.0, _number)), "float"),
)

for _name, _element, _attrs, _accepted in ACTIVATIONS:
    register(OpDef(
        name=f"relax.nn.{_name}",
        args=("data",),
        attrs=_attrs,
        infer=elementwise_infer(_accepted, None),
        pattern="elementwise",
        legalize=elementwise_legalize(_name, _element),
        doc=f"elementwise {_name}",
    ))
