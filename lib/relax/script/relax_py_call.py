"""`R.call_py_func`: a call of a Python function of the module, by its name.

Three spellings give the same Call(Op("relax.call_py_func"), (StringImm name, Tuple args),
sinfo_args=(S,)):

    R.call_py_func("f", x, y, out_ty=S)                   TVM's Python API: the arguments one by one
    R.call_py_func(cls.f, (x, y), out_sinfo=S)            the design's spelling: cls.f names a py_func
    R.call_py_func(R.str("f"), (x, y), ty_args=(S,))      what TVM 0.27 (and our printer) prints

One positional tuple literal after the name is the argument tuple (so the printed form
reads back); `out_ty=[S1, S2]` is a tuple of tensors, as for call_tir.
"""

from __future__ import annotations

import ast

from .. import ir

_OUTPUT_KEYWORDS = ("out_ty", "out_sinfo", "ty_args")


def _function_name(parser, node: ast.expr) -> str:
    """The Python function's name: a string, R.str("f"), or cls.f."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and parser.ctx.dialect_of(node) is None:
        return node.attr  # cls.f: a method of the module, known by its name (it is no Relax value)
    value = parser.expr(node)
    if isinstance(value, ir.StringImm):
        return value.value
    raise parser.ctx.fail("R.call_py_func needs the Python function's name: \"f\", R.str(\"f\") or cls.f", node)


def _output(parser, node: ast.Call):
    found = [keyword for keyword in node.keywords if keyword.arg in _OUTPUT_KEYWORDS]
    for keyword in node.keywords:
        if keyword.arg not in _OUTPUT_KEYWORDS:
            raise parser.ctx.fail(f"R.call_py_func has no argument '{keyword.arg}'", keyword)
    if len(found) != 1:
        problem = "needs the struct info of its result (out_ty=...)" if not found else "takes one of out_ty, out_sinfo"
        raise parser.ctx.fail(f"R.call_py_func {problem}", node if not found else found[1])
    keyword = found[0]
    if keyword.arg == "ty_args":  # the printed form: a 1-tuple holding the result's struct info
        infos = parser.sinfo_args(keyword.value)
        if len(infos) != 1:
            raise parser.ctx.fail("R.call_py_func: ty_args holds one struct info", keyword.value)
        return infos[0]
    return parser.struct_info_list(keyword.value)


def call_py_func(parser, node: ast.Call) -> ir.Call:
    positional = parser.positional(node)
    if not positional:
        raise parser.ctx.fail("R.call_py_func needs the Python function's name", node)
    name = _function_name(parser, positional[0])
    rest = positional[1:]
    span = parser.ctx.span(node)
    if len(rest) == 1 and isinstance(rest[0], ast.Tuple):
        args = parser.expr(rest[0])
    else:
        args = ir.Tuple(tuple(parser.exprs(rest)), span=span)
    output = _output(parser, node)
    return ir.Call(ir.Op("relax.call_py_func", span=span), (ir.StringImm(name, span=parser.ctx.span(positional[0])), args),
                   ir.EMPTY, (output,), span=span)
