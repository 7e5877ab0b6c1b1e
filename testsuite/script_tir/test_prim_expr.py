"""parse_prim_expr: literals, operators, T.<name> calls, buffer loads and their errors."""

import pytest

from relax.ir import tir
from relax.script.context import Scope

from tir_helpers import dump, expr


@pytest.fixture
def scope():
    s = Scope()
    s.define("n", tir.Var("n", "int64"))
    s.define("i", tir.Var("i", "int32"))
    s.define("x", tir.Var("x", "float32"))
    s.define("h", tir.Var("h", "float16"))
    four = tir.IntImm("int32", 4)
    s.define("A", tir.Buffer("A", (four, four), "float32", data=tir.Var("A_data", "handle")))
    return s


def ok(text, scope, default_int_dtype="int32"):
    result, errors = expr(text, scope, default_int_dtype)
    assert errors == []
    return dump(result)


I32 = lambda v: ("IntImm", "int32", v)  # noqa: E731
I64 = lambda v: ("IntImm", "int64", v)  # noqa: E731
F32 = lambda v: ("FloatImm", "float32", v)  # noqa: E731


@pytest.mark.parametrize(
    "text, default, expected",
    [
        ("8", "int32", I32(8)),
        ("8", "int64", I64(8)),
        ("2 * 3 + 1", "int64", I64(7)),
        ("True", "int32", ("IntImm", "bool", 1)),
        ("1.5", "int32", F32(1.5)),
        ("-3", "int32", I32(-3)),
        ("T.int64(3)", "int32", I64(3)),
        ("T.uint8(255)", "int32", ("IntImm", "uint8", 255)),
        ("T.float16(0.5)", "int32", ("FloatImm", "float16", 0.5)),
        ("T.bool(True)", "int32", ("IntImm", "bool", 1)),
        ("T.float32(-340282346638528859811704183484516925440.0)", "int32", F32(-3.4028234663852886e38)),
        ("T.int64(2) * 3", "int32", I64(6)),
        ("T.max_value('int8')", "int32", ("IntImm", "int8", 127)),
    ],
)
def test_constants(scope, text, default, expected):
    assert ok(text, scope, default) == expected


def test_float_special_values(scope):
    result, _ = expr("T.float32('-inf')", scope)
    assert result.value == float("-inf") and result.dtype == "float32"


def test_literals_take_the_type_of_the_other_operand(scope):
    assert ok("n * 2 + 1", scope) == ("Add", ("Mul", "n:int64", I64(2)), I64(1))
    assert ok("x * 2", scope) == ("Mul", "x:float32", F32(2.0))
    assert ok("i + 0.5", scope) == ("Add", ("Cast", "float32", "i:int32"), F32(0.5))


def test_mixed_types_are_widened(scope):
    assert ok("n + i", scope) == ("Add", "n:int64", ("Cast", "int64", "i:int32"))
    assert ok("h * x", scope) == ("Mul", ("Cast", "float32", "h:float16"), "x:float32")


def test_arithmetic_operators(scope):
    assert ok("i // 4 % 3", scope) == ("FloorMod", ("FloorDiv", "i:int32", I32(4)), I32(3))
    assert ok("x / x - x", scope) == ("Sub", ("Div", "x:float32", "x:float32"), "x:float32")
    assert ok("-i", scope) == ("Mul", "i:int32", I32(-1))
    assert ok("i + 0", scope) == "i:int32"


def test_comparisons_and_logic(scope):
    assert ok("0 < i < 5", scope) == ("And", ("LT", I32(0), "i:int32"), ("LT", "i:int32", I32(5)))
    assert ok("not i == 3 or i != 1", scope) == (
        "Or", ("Not", ("EQ", "i:int32", I32(3))), ("NE", "i:int32", I32(1))
    )
    assert ok("x >= 1.0", scope) == ("GE", "x:float32", F32(1.0))


def test_bitwise_operators_are_intrinsics(scope):
    assert ok("i << 2 | 1", scope) == (
        "Call", "int32", "tir.bitwise_or",
        (("Call", "int32", "tir.shift_left", ("i:int32", I32(2))), I32(1)),
    )
    assert ok("~i", scope) == ("Call", "int32", "tir.bitwise_not", ("i:int32",))
    assert ok("T.shift_right(i, 1)", scope) == ("Call", "int32", "tir.shift_right", ("i:int32", I32(1)))


@pytest.mark.parametrize("name", ["exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "floor", "fabs"])
def test_math_intrinsics_keep_the_argument_type(scope, name):
    assert ok(f"T.{name}(h)", scope) == ("Call", "float16", f"tir.{name}", ("h:float16",))


def test_intrinsic_result_types(scope):
    assert ok("T.isnan(x)", scope) == ("Call", "bool", "tir.isnan", ("x:float32",))
    assert ok("T.pow(x, 2)", scope) == ("Call", "float32", "tir.pow", ("x:float32", F32(2.0)))
    assert ok("T.if_then_else(i < 2, x, 1.0)", scope) == (
        "Call", "float32", "tir.if_then_else", (("LT", "i:int32", I32(2)), "x:float32", F32(1.0))
    )
    assert ok("T.call_extern('float32', 'myfunc', x, i)", scope) == (
        "Call", "float32", "tir.call_extern", (("StringImm", "myfunc"), "x:float32", "i:int32")
    )
    assert ok("T.call_pure_extern('int32', 'f')", scope) == ("Call", "int32", "tir.call_pure_extern", (("StringImm", "f"),))
    assert ok("T.reinterpret('int32', x)", scope) == ("Call", "int32", "tir.reinterpret", ("x:float32",))


def test_node_constructors(scope):
    assert ok("T.Cast('float32', i)", scope) == ("Cast", "float32", "i:int32")
    assert ok("T.float32(i)", scope) == ("Cast", "float32", "i:int32")
    assert ok("T.max(x, 0.0)", scope) == ("Max", "x:float32", F32(0.0))
    assert ok("T.min(i, n)", scope) == ("Min", ("Cast", "int64", "i:int32"), "n:int64")
    assert ok("T.truncdiv(i, 2)", scope) == ("Div", "i:int32", I32(2))
    assert ok("T.truncmod(i, 2)", scope) == ("Mod", "i:int32", I32(2))
    assert ok("T.floordiv(i, 2)", scope) == ("FloorDiv", "i:int32", I32(2))
    assert ok("T.floormod(i, 2)", scope) == ("FloorMod", "i:int32", I32(2))
    assert ok("T.Select(i < 2, x, 0)", scope) == ("Select", ("LT", "i:int32", I32(2)), "x:float32", F32(0.0))
    assert ok("T.Ramp(i, 1, 4)", scope) == ("Ramp", "i:int32", I32(1), 4)
    assert ok("T.Broadcast(x, 8)", scope) == ("Broadcast", "x:float32", 8)
    assert ok("T.abs(x)", scope) == ("Call", "float32", "tir.fabs", ("x:float32",))


def test_let_binds_its_variable_in_the_body(scope):
    result, errors = expr("T.Let(y * 2, where={y: i + 1})", scope)
    assert errors == []
    assert isinstance(result, tir.Let) and result.body.a is result.var
    assert dump(result.value) == ("Add", "i:int32", I32(1))


def test_buffer_loads(scope):
    assert ok("A[i, 0]", scope) == ("BufferLoad", "buffer A", ("i:int32", I32(0)))
    assert ok("A[i, 0:4]", scope) == ("BufferLoad", "buffer A", ("i:int32", ("Ramp", I32(0), I32(1), 4)))
    assert ok("A.data", scope) == "A_data:handle"


def test_variables_are_shared_not_copied(scope):
    result, _ = expr("n", scope)
    assert result is scope.lookup("n")


def test_spans_point_at_the_source(scope):
    result, _ = expr("i + T.exp(x)", scope)
    assert (result.span.column, result.span.end_column) == (1, 13)
    assert result.b.span.column == 5


@pytest.mark.parametrize(
    "text, position, message",
    [
        ("y + 1", "1:1", "undefined variable 'y'"),
        ("i + T.expp(x)", "1:5", "unknown TIR function 'T.expp'; did you mean 'T.exp'?"),
        ("T.exp(x, x)", "1:1", "T.exp takes 1 argument, got 2"),
        ("T.Cast('float33', i)", "1:8", "unknown data type 'float33'"),
        ("T.int64()", "1:1", "'T.int64()' declares a variable and is not an expression"),
        ("A[i]", "1:1", "buffer 'A' has 2 dimensions but is indexed with 1 index"),
        ("x + A", "1:5", "buffer 'A' is not a value; index it as A[...]"),
        ("i ** 2", "1:1", "operator '**' is not supported in TIR"),
        ("R.add(i, i)", "1:1", "'R.add' is not a TIR function"),
        ("T.float32('one')", "1:11", "'one' is not a float32 constant"),
        ("B[i]", "1:1", "undefined buffer 'B'"),
        ("T.Ramp(i, 1, n)", "1:14", "expected a constant integer"),
    ],
)
def test_errors(scope, text, position, message):
    _, errors = expr(text, scope)
    assert errors == [(position, message)]


def test_independent_undefined_names_are_all_reported(scope):
    result, errors = expr("a + b", scope)
    assert errors == [("1:1", "undefined variable 'a'"), ("1:5", "undefined variable 'b'")]
    assert isinstance(result, tir.Add)


def test_shuffle(scope):
    result, errors = expr("T.Shuffle([A[i, 0:4]], [3, 2, 1, 0])", scope)
    assert errors == [] and isinstance(result, tir.Shuffle)
    assert result.dtype == "float32x4"
    assert dump(result.indices) == (I32(3), I32(2), I32(1), I32(0))


def test_ldexp_keeps_an_integer_exponent(scope):
    assert ok("T.ldexp(x, 2)", scope) == ("Call", "float32", "tir.ldexp", ("x:float32", I32(2)))


def test_python_numbers_promote_as_in_tvm(scope):
    """Checked against TVM 0.27: a literal is int32/float32 first, then promotion."""
    s = scope
    s.define("u", tir.Var("u", "uint8"))
    assert ok("u + 1", s) == ("Add", ("Cast", "int32", "u:uint8"), I32(1))
    assert ok("h * 0.5", s) == ("Mul", ("Cast", "float32", "h:float16"), F32(0.5))
    assert ok("h * 2", s) == ("Mul", "h:float16", ("FloatImm", "float16", 2.0))
    assert ok("2 ** 3 + 7 // 2", s) == I32(11)


def test_folded_floats_round_to_their_type(scope):
    assert ok("T.float32(1) / 3", scope) == F32(0.3333333432674408)
    assert ok("T.float64(0.1) * 3", scope) == ("FloatImm", "float64", 0.30000000000000004)


def test_float_classes_expand_as_in_tvm(scope):
    nan = ("Call", "bool", "tir.isnan", ("x:float32",))
    is_inf = ("And", ("EQ", ("Call", "float32", "tir.fabs", ("x:float32",)), F32(float("inf"))), ("Not", nan))
    assert ok("T.isinf(x)", scope) == is_inf
    assert ok("T.isfinite(x)", scope) == ("And", ("Not", is_inf), ("Not", nan))
    assert ok("T.isnan(i)", scope) == ("IntImm", "bool", 0)
    assert ok("T.isfinite(i)", scope) == ("IntImm", "bool", 1)


def test_abs_of_an_integer_selects(scope):
    assert ok("T.abs(i)", scope) == ("Select", ("GE", "i:int32", I32(0)), "i:int32", ("Sub", I32(0), "i:int32"))


def test_let_uses_a_declared_variable(scope):
    declared = tir.Var("y", "float32")
    scope.define("y", declared)
    result, errors = expr("T.Let(y + T.float32(1), where={y: x})", scope)
    assert errors == [] and result.var is declared and result.body.a is declared


@pytest.mark.parametrize(
    "text, expected",
    [  # each checked against TVM 0.27's parse of the same text
        ("T.int32(2) == 2", ("EQ", I32(2), I32(2))),
        ("not T.bool(True)", ("Not", ("IntImm", "bool", 1))),
        ("T.bool(True) and i > 1", ("And", ("IntImm", "bool", 1), ("GT", "i:int32", I32(1)))),
        ("T.int32(2) < T.int32(3)", ("IntImm", "bool", 1)),
        ("T.max(T.int32(2), 3)", I32(3)),
        ("T.if_then_else(T.bool(True), i, 0)", "i:int32"),
        ("T.Select(T.bool(True), i, 0)", ("Select", ("IntImm", "bool", 1), "i:int32", I32(0))),
        ("T.float32(0) / x", F32(0.0)),
        ("x * 0", F32(0.0)),
        ("T.floor(T.float32(2.5)) + T.round(T.float32(2.5)) + T.trunc(T.float32(-2.5))", F32(2.0)),
        ("T.ceil(i)", "i:int32"),
        ("T.floor(x)", ("Call", "float32", "tir.floor", ("x:float32",))),
        ("T.fabs(T.float32(-2))", F32(2.0)),
        ("T.abs(T.int32(-3))", I32(3)),
        ("T.truncmod(x, T.float32(0.5))", ("Mod", "x:float32", F32(0.5))),
        ("T.truncmod(T.float32(1), 0.5)", ("Mod", F32(1.0), F32(0.5))),
        ("i % 1", I32(0)),
        ("T.Cast('int32', T.int64(3))", ("Cast", "int32", I64(3))),
        ("T.int8(100) + T.int8(100)", ("IntImm", "int8", -56)),
        ("T.float16(1) + T.float16(2)", ("Add", ("FloatImm", "float16", 1.0), ("FloatImm", "float16", 2.0))),
        ("T.max(T.float16(1), T.float16(2))", ("FloatImm", "float16", 2.0)),
        ("h * T.float16(0)", ("FloatImm", "float16", 0.0)),
        ("T.uint8(7) == 3", ("EQ", ("IntImm", "uint8", 7), ("IntImm", "uint8", 3))),
        ("T.Div(7, 2)", ("Div", I32(7), I32(2))),
        ("T.floordiv(7, 2)", I32(3)),
        ("T.isnan(h)", ("Call", "bool", "tir.isnan", (("Cast", "float32", "h:float16"),))),
        ("T.isnan(T.float32(0.25))", ("IntImm", "bool", 0)),
        ("T.int32(2) < 3", ("IntImm", "bool", 1)),
        ("2 < T.int32(3)", ("LT", I32(2), I32(3))),
        ("-1 > x", ("GT", F32(-1.0), "x:float32")),
        ("i < 3.5", ("LT", ("Cast", "float32", "i:int32"), F32(3.5))),
        ("T.int32(2) == T.int32(2)", ("EQ", I32(2), I32(2))),
        ("T.likely(T.int32(0))", I32(0)),
        ("T.likely(i < 2)", ("Call", "bool", "tir.likely", (("LT", "i:int32", I32(2)),))),
        ("not 0 or i", True),
        ("0.5 and 0.25", 0.25),
    ],
)
def test_folding_matches_tvm(scope, text, expected):
    if isinstance(expected, (bool, float)):
        expected = ("IntImm", "bool", int(expected)) if isinstance(expected, bool) else F32(expected)
    assert ok(text, scope) == expected
