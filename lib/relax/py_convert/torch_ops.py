"""The PyTorch table of as_pyfunc (`backend="torch"`): one row per Relax operator, to
`torch.*` and `torch.nn.functional` (imported as `F`): `R.nn.relu(x)` -> `F.relu(x)`.

The converted function takes and returns torch tensors; relax.BasePyModule hands
`self.call_tir` and the Relax functions torch tensors through DLPack. Torch is optional:
this table is text, and the text runs only where torch is installed. Dtypes are named
`torch.float32`; Relax padding (top, left, bottom, right) goes to `F.pad` first when it is
not symmetric, since `F.conv2d` pads both sides alike.
"""

from __future__ import annotations

from .numpy_ops import BINARY, REDUCTIONS, UNARY
from .table import Backend, OpCall, call, python_value, require_attrs, template, with_out_dtype

# numpy's names that torch spells differently; the rest are `torch.<numpy name>`.
RENAMED = {
    "np.arcsin": "torch.asin", "np.arccos": "torch.acos", "np.arctan": "torch.atan", "np.arcsinh": "torch.asinh",
    "np.arccosh": "torch.acosh", "np.arctanh": "torch.atanh", "np.invert": "torch.bitwise_not",
    "np.mod": "torch.remainder", "np.arctan2": "torch.atan2", "np.power": "torch.pow",
    "np.left_shift": "torch.bitwise_left_shift", "np.right_shift": "torch.bitwise_right_shift",
    "nn.erf": "torch.erf", "nn.sigmoid": "torch.sigmoid", "nn.round_half_away": "_round_half_away",
    "nn.gelu": "F.gelu", "np.var": "torch.var", "np.max": "torch.amax", "np.min": "torch.amin",
}


def _torch_name(numpy_name: str) -> str:
    return RENAMED.get(numpy_name, "torch." + numpy_name.split(".", 1)[1])


def _dims(axis) -> str:
    return "None" if axis is None else python_value(tuple(axis) if isinstance(axis, (tuple, list)) else (axis,))


def _reduction(function: str):
    def row(op: OpCall) -> str:
        x, axis, keep = op.args[0], op.attr("axis"), op.attr("keepdims")
        extra = ", correction=0" if function in ("torch.var", "torch.std") else ""
        if axis is None:  # torch reduces everything when no dim is given, and keeps no dims then
            text = f"{function}({x}{extra})"
            return f"{text}.reshape((1,) * {x}.dim())" if keep else text
        if function == "torch.prod":  # prod takes one dim at a time
            return f"_reduce(torch.prod, {x}, {_dims(axis)}, {keep!r})"
        return f"{function}({x}, dim={_dims(axis)}, keepdim={keep!r}{extra})"

    return row


def _arg_reduction(function: str):
    return template(function + "({a}, dim={axis}, keepdim={keepdims})")


def _padding(op: OpCall, index: int) -> tuple[str, str]:
    """(input, padding=...) for a 2-d window operator."""
    top, left, bottom, right = op.attr("padding")
    if (top, left) == (bottom, right):
        return op.args[index], f"({top}, {left})"
    return f"F.pad({op.args[index]}, ({left}, {right}, {top}, {bottom}))", "(0, 0)"


def _conv2d(op: OpCall) -> str:
    data, padding = _padding(op, 0)
    text = (f"F.conv2d({data}, {op.args[1]}, stride={python_value(op.attr('strides'))}, padding={padding}, "
            f"dilation={python_value(op.attr('dilation'))}, groups={op.attr('groups')})")
    return text if op.attr("out_dtype") in (None, "", "void") else f"{text}.to(torch.{op.attr('out_dtype')})"


def _pool(function: str):
    def row(op: OpCall) -> str:
        data, padding = _padding(op, 0)
        extra = f", count_include_pad={op.attr('count_include_pad')!r}" if function == "F.avg_pool2d" else ""
        dilation = f", dilation={python_value(op.attr('dilation'))}" if function == "F.max_pool2d" else ""
        return (f"{function}({data}, kernel_size={python_value(op.attr('pool_size'))}, "
                f"stride={python_value(op.attr('strides'))}, padding={padding}{dilation}, "
                f"ceil_mode={op.attr('ceil_mode')!r}{extra})")

    return require_attrs(row, layout="NCHW", out_layout="NCHW")


def _layer_norm(op: OpCall) -> str:
    x, gamma, beta = op.args
    axes = op.attr("axes")
    if not all(axis < 0 for axis in axes):
        raise op.refuse("with non-negative axes has no torch mapping; run legalize-ops first")
    shape = f"{x}.shape[{-len(axes)}:]"
    weight = gamma if op.attr("scale", True) else "None"
    bias = beta if op.attr("center", True) else "None"
    return f"F.layer_norm({x}, {shape}, {weight}, {bias}, eps={op.attr('epsilon')!r})"


def _strided_slice(op: OpCall) -> str:
    strides = op.args[4] if len(op.args) > 4 else "None"
    return f"_strided_slice({', '.join(op.args[:4])}, {strides})"


def _creation(function: str):
    def row(op: OpCall) -> str:
        fill = f", {op.args[1]}.item()" if function == "torch.full" else ""  # torch fills with a number
        return f"{function}({op.args[0]}{fill}, dtype=torch.{op.out_dtype})"

    return row


def _like(function: str):
    def row(op: OpCall) -> str:
        fill = f", {op.args[1]}.item()" if function == "torch.full_like" else ""
        return f"{function}({op.args[0]}{fill}, dtype=torch.{op.out_dtype})"

    return row


def _rows() -> dict:
    rows = {f"relax.{name}": call(_torch_name(function)) for name, function in UNARY.items()}
    rows.update({f"relax.{name}": call(_torch_name(function)) for name, function in BINARY.items()})
    rows.update({f"relax.{name}": _reduction(_torch_name(function)) for name, function in REDUCTIONS.items()})
    rows.update({
        "relax.nn.gelu_tanh": template("F.gelu({a}, approximate='tanh')"),
        "relax.divide": template("_divide({a}, {b})"),
        "relax.argmax": _arg_reduction("torch.argmax"),
        "relax.argmin": _arg_reduction("torch.argmin"),
        "relax.clip": template("torch.clamp({a}, {b}, {c})"),
        "relax.where": call("torch.where"),
        "relax.astype": template("{a}.to(torch.{dtype_name})"),
        "relax.matmul": with_out_dtype(call("torch.matmul"), "{}.to(torch.{})"),
        "relax.reshape": call("torch.reshape"),
        "relax.permute_dims": template("{a}.permute(*_axes({a}, {axes})).contiguous()"),
        "relax.concat": template("torch.cat({a}, dim={axis})"),
        "relax.stack": template("torch.stack({a}, dim={axis})"),
        "relax.split": template("_split({a}, {indices_or_sections}, {axis})"),
        "relax.expand_dims": template("_expand_dims({a}, {axis})"),
        "relax.squeeze": template("_squeeze({a}, {axis})"),
        "relax.flatten": template("torch.reshape({a}, (-1,))"),
        "relax.strided_slice": _strided_slice,
        "relax.take": template("torch.index_select({a}, {axis}, {b}.reshape(-1)).reshape("
                               "{a}.shape[:{axis}] + {b}.shape + {a}.shape[{axis} + 1:])"),
        "relax.flip": lambda op: f"torch.flip({op.args[0]}, dims={_dims(op.attr('axis'))})",
        "relax.tile": template("torch.tile({a}, {repeats})"),
        "relax.repeat": template("torch.repeat_interleave({a}, {b}, dim={axis})"),
        "relax.broadcast_to": template("torch.broadcast_to({a}, {b}).contiguous()"),
        "relax.zeros": _creation("torch.zeros"),
        "relax.ones": _creation("torch.ones"),
        "relax.full": _creation("torch.full"),
        "relax.zeros_like": _like("torch.zeros_like"),
        "relax.ones_like": _like("torch.ones_like"),
        "relax.full_like": _like("torch.full_like"),
        "relax.shape_of": template("tuple({a}.shape)"),
        "relax.tril": lambda op: f"torch.tril({op.args[0]}, {op.args[1] if len(op.args) > 1 else 0})",
        "relax.triu": lambda op: f"torch.triu({op.args[0]}, {op.args[1] if len(op.args) > 1 else 0})",
        "relax.cumsum": template("torch.cumsum({a}, dim={axis})"),
        "relax.cumprod": template("torch.cumprod({a}, dim={axis})"),
        "relax.nn.relu": call("F.relu"),
        "relax.nn.relu6": call("F.relu6"),
        "relax.nn.silu": call("F.silu"),
        "relax.nn.leakyrelu": template("F.leaky_relu({a}, {alpha})"),
        "relax.nn.softmax": template("F.softmax({a}, dim={axis})"),
        "relax.nn.log_softmax": template("F.log_softmax({a}, dim={axis})"),
        "relax.nn.layer_norm": _layer_norm,
        "relax.nn.conv2d": require_attrs(_conv2d, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW"),
        "relax.nn.max_pool2d": _pool("F.max_pool2d"),
        "relax.nn.avg_pool2d": _pool("F.avg_pool2d"),
    })
    return rows


# Small helpers the torch text calls where torch has no one-call spelling (defined in the
# function's preamble when used, so the text stays self-contained).
HELPERS = {
    "_divide(": ("def _divide(a, b):\n"
                 "    return torch.div(a, b, rounding_mode='trunc') if not torch.is_floating_point(a) else a / b"),
    "_round_half_away(": "def _round_half_away(x):\n    return torch.sign(x) * torch.floor(torch.abs(x) + 0.5)",
    "_axes(": "def _axes(x, axes):\n    return tuple(reversed(range(x.dim()))) if axes is None else axes",
    "_split(": ("def _split(x, sections, axis):\n"
                "    if isinstance(sections, int):\n"
                "        return torch.chunk(x, sections, dim=axis)\n"
                "    bounds = [0, *sections, x.shape[axis]]\n"
                "    return tuple(x.narrow(axis, lo, hi - lo) for lo, hi in zip(bounds, bounds[1:]))"),
    "_expand_dims(": ("def _expand_dims(x, axes):\n"
                      "    for axis in sorted(a % (x.dim() + len(axes)) for a in axes):\n"
                      "        x = x.unsqueeze(axis)\n"
                      "    return x"),
    "_squeeze(": ("def _squeeze(x, axes):\n"
                  "    return x.squeeze() if axes is None else x.squeeze(tuple(axes))"),
    "_strided_slice(": ("def _strided_slice(x, axes, begin, end, strides):\n"
                        "    index = [slice(None)] * x.dim()\n"
                        "    for i, axis in enumerate(axes):\n"
                        "        index[axis] = slice(begin[i], end[i], strides[i] if strides else 1)\n"
                        "    return x[tuple(index)].contiguous()"),
    "_reduce(": ("def _reduce(function, x, axes, keepdim):\n"
                 "    for axis in sorted((a % x.dim() for a in axes), reverse=True):\n"
                 "        x = function(x, dim=axis, keepdim=keepdim)\n"
                 "    return x"),
}

TORCH = Backend(
    name="torch",
    imports=(),
    tensor="torch.tensor",
    ops=_rows(),
    uses={"torch.": "import torch", "F.": "import torch.nn.functional as F", "np.": "import numpy as np", "base64.": "import base64", "math.": "import math",
          "get_global_func(": "from relax.runtime import get_global_func", **HELPERS},
)
