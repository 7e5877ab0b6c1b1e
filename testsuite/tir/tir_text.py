"""A compact text form of TIR expressions for test messages (not TVMScript)."""

from relax.ir import tir

_OPS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Mod": "%", "EQ": "==", "NE": "!=",
        "LT": "<", "LE": "<=", "GT": ">", "GE": ">=", "And": "&&", "Or": "||"}


def text(expr) -> str:
    name = type(expr).__name__
    if isinstance(expr, tir.Var):
        return expr.name
    if isinstance(expr, (tir.IntImm, tir.FloatImm)):
        return str(expr.value)
    if name in _OPS:
        return f"({text(expr.a)} {_OPS[name]} {text(expr.b)})"
    if isinstance(expr, tir.BinaryOp):
        return f"{name.lower()}({text(expr.a)}, {text(expr.b)})"
    if isinstance(expr, tir.Not):
        return f"!{text(expr.a)}"
    if isinstance(expr, tir.Select):
        return f"select({text(expr.condition)}, {text(expr.true_value)}, {text(expr.false_value)})"
    if isinstance(expr, tir.Cast):
        return f"{expr.dtype}({text(expr.value)})"
    if isinstance(expr, tir.BufferLoad):
        return f"{expr.buffer.name}[{', '.join(text(i) for i in expr.indices)}]"
    if isinstance(expr, tir.Call):
        return f"{expr.op}({', '.join(text(a) for a in expr.args)})"
    return name
