"""The numpy table of as_pyfunc: one row per Relax operator (table.py says what a row is).

Rows follow the operators' Relax semantics on numpy arrays: results keep the dtype the
struct info says (numpy keeps float32 for float32 operands; a Python number is a weak
scalar), 0-d results are wrapped into arrays, and views (transpose, slices, broadcast)
are copied into compact arrays, since a kernel called by `self.call_tir` reads compact
row-major memory. Operators without a one-line numpy spelling call the helpers of
numpy_nn.py (`nn.conv2d`, ...). An operator missing here is refused by name: convert
after legalize-ops, where it is a call_tir.
"""

from __future__ import annotations

from .table import Backend, OpCall, call, python_value, require_attrs, template, with_out_dtype

UNARY = {
    "abs": "np.abs", "negative": "np.negative", "exp": "np.exp", "log": "np.log", "sqrt": "np.sqrt",
    "tanh": "np.tanh", "sin": "np.sin", "cos": "np.cos", "tan": "np.tan", "asin": "np.arcsin",
    "acos": "np.arccos", "atan": "np.arctan", "sinh": "np.sinh", "cosh": "np.cosh", "asinh": "np.arcsinh",
    "acosh": "np.arccosh", "atanh": "np.arctanh", "floor": "np.floor", "ceil": "np.ceil", "trunc": "np.trunc",
    "sign": "np.sign", "square": "np.square", "isnan": "np.isnan", "isinf": "np.isinf",
    "isfinite": "np.isfinite", "logical_not": "np.logical_not", "bitwise_not": "np.invert",
    "erf": "nn.erf", "sigmoid": "nn.sigmoid", "round": "nn.round_half_away",
    "nn.gelu": "nn.gelu", "nn.gelu_tanh": "nn.gelu_tanh",
}

BINARY = {
    "add": "np.add", "subtract": "np.subtract", "multiply": "np.multiply", "power": "np.power",
    "maximum": "np.maximum", "minimum": "np.minimum", "floor_divide": "np.floor_divide",
    "floor_mod": "np.mod", "mod": "np.fmod", "atan2": "np.arctan2", "equal": "np.equal",
    "not_equal": "np.not_equal", "less": "np.less", "less_equal": "np.less_equal", "greater": "np.greater",
    "greater_equal": "np.greater_equal", "logical_and": "np.logical_and", "logical_or": "np.logical_or",
    "logical_xor": "np.logical_xor", "bitwise_and": "np.bitwise_and", "bitwise_or": "np.bitwise_or",
    "bitwise_xor": "np.bitwise_xor", "left_shift": "np.left_shift", "right_shift": "np.right_shift",
    "log_add_exp": "np.logaddexp",
}

REDUCTIONS = {"sum": "np.sum", "mean": "np.mean", "max": "np.max", "min": "np.min", "prod": "np.prod",
              "variance": "np.var", "std": "np.std"}


def _divide(op: OpCall) -> str:
    # integer division in Relax truncates toward zero (TIR's Div); numpy's `/` gives floats
    a, b = op.args
    if op.out_dtype and op.out_dtype.startswith(("int", "uint")):
        return f"np.trunc(np.divide({a}, {b})).astype({op.out_dtype!r})"
    return f"np.divide({a}, {b})"


def _reduction(function: str):
    def row(op: OpCall) -> str:
        text = f"{function}({op.args[0]}, axis={python_value(op.attr('axis'))}, keepdims={op.attr('keepdims')!r})"
        return f"{text}.astype({op.out_dtype!r})" if function == "np.mean" and op.out_dtype else text

    return row


def _arg_reduction(function: str):
    return template(function + "({a}, axis={axis}, keepdims={keepdims}).astype(\"int64\")")


def _permute_dims(op: OpCall) -> str:
    return f"np.transpose({op.args[0]}, {python_value(op.attr('axes'))}).copy()"


def _split(op: OpCall) -> str:
    sections = op.attr("indices_or_sections")
    return f"tuple(np.split({op.args[0]}, {python_value(sections)}, axis={op.attr('axis')}))"


def _take(op: OpCall) -> str:
    mode = op.attr("mode", "fast")
    # "fast" assumes in-range indices, as numpy's default "raise" checks
    keyword = f", mode={mode!r}" if mode in ("clip", "wrap") else ""
    return f"np.take({op.args[0]}, {op.args[1]}, axis={op.attr('axis')!r}{keyword})"


def _strided_slice(op: OpCall) -> str:
    strides = op.args[4] if len(op.args) > 4 else "None"
    return f"nn.strided_slice({', '.join(op.args[:4])}, {strides})"


def _creation(function: str):
    def row(op: OpCall) -> str:
        fill = f", {op.args[1]}" if function == "np.full" else ""
        return f"{function}({op.args[0]}{fill}, dtype={op.out_dtype!r})"

    return row


def _like(function: str):
    def row(op: OpCall) -> str:
        fill = f", {op.args[1]}" if function == "np.full_like" else ""
        return f"{function}({op.args[0]}{fill}, dtype={op.out_dtype!r})"

    return row


def _pool(function: str, *extra: str):
    return require_attrs(call(function, "pool_size", "strides", "dilation", "padding", "ceil_mode", *extra),
                         layout="NCHW", out_layout="NCHW")


def _rows() -> dict:
    rows = {f"relax.{name}": call(function) for name, function in UNARY.items()}
    rows.update({f"relax.{name}": call(function) for name, function in BINARY.items()})
    rows.update({f"relax.{name}": _reduction(function) for name, function in REDUCTIONS.items()})
    rows.update({
        "relax.divide": _divide,
        "relax.argmax": _arg_reduction("np.argmax"),
        "relax.argmin": _arg_reduction("np.argmin"),
        "relax.clip": template("np.clip({a}, {b}, {c})"),
        "relax.where": call("np.where"),
        "relax.astype": template("{a}.astype({dtype})"),
        "relax.matmul": with_out_dtype(call("np.matmul"), '{}.astype("{}")'),
        "relax.reshape": call("np.reshape"),
        "relax.permute_dims": _permute_dims,
        "relax.concat": template("np.concatenate({a}, axis={axis})"),
        "relax.stack": template("np.stack({a}, axis={axis})"),
        "relax.split": _split,
        "relax.expand_dims": template("np.expand_dims({a}, {axis})"),
        "relax.squeeze": template("np.squeeze({a}, axis={axis})"),
        "relax.flatten": template("np.reshape({a}, (-1,))"),
        "relax.strided_slice": _strided_slice,
        "relax.take": _take,
        "relax.flip": template("np.flip({a}, axis={axis}).copy()"),
        "relax.tile": template("np.tile({a}, {repeats})"),
        "relax.repeat": template("np.repeat({a}, {b}, axis={axis})"),
        "relax.broadcast_to": template("np.broadcast_to({a}, {b}).copy()"),
        "relax.zeros": _creation("np.zeros"),
        "relax.ones": _creation("np.ones"),
        "relax.full": _creation("np.full"),
        "relax.zeros_like": _like("np.zeros_like"),
        "relax.ones_like": _like("np.ones_like"),
        "relax.full_like": _like("np.full_like"),
        "relax.shape_of": template("{a}.shape"),
        "relax.tril": lambda op: f"np.tril({op.args[0]}, {op.args[1] if len(op.args) > 1 else 0})",
        "relax.triu": lambda op: f"np.triu({op.args[0]}, {op.args[1] if len(op.args) > 1 else 0})",
        "relax.cumsum": template("np.cumsum({a}, axis={axis}, dtype={dtype})"),
        "relax.cumprod": template("np.cumprod({a}, axis={axis}, dtype={dtype})"),
        "relax.nn.relu": template("np.maximum({a}, 0)"),
        "relax.nn.relu6": template("np.clip({a}, 0, 6)"),
        "relax.nn.silu": template("({a} * nn.sigmoid({a}))"),
        "relax.nn.leakyrelu": template("np.where({a} > 0, {a}, {a} * {alpha})"),
        "relax.nn.softmax": call("nn.softmax", "axis"),
        "relax.nn.log_softmax": call("nn.log_softmax", "axis"),
        "relax.nn.layer_norm": call("nn.layer_norm", "axes", "epsilon", "center", "scale"),
        "relax.nn.conv2d": require_attrs(call("nn.conv2d", "strides", "padding", "dilation", "groups", "out_dtype"),
                                         data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW"),
        "relax.nn.max_pool2d": _pool("nn.max_pool2d"),
        "relax.nn.avg_pool2d": _pool("nn.avg_pool2d", "count_include_pad"),
    })
    return rows


NUMPY = Backend(
    name="numpy",
    imports=(),
    tensor="np.array",
    ops=_rows(),
    uses={"np.": "import numpy as np", "nn.": "from relax.py_convert import numpy_nn as nn", "base64.": "import base64",
          "math.": "import math", "get_global_func(": "from relax.runtime import get_global_func"},
    scalar_result="np.asarray",
)
