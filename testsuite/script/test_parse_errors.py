"""Errors are collected: every independent error of a file is reported, in source order."""

from __future__ import annotations

import pytest
from parse_helpers import errors

from relax.diagnostics import DiagnosticError
from relax.script import parse


def test_independent_errors_in_several_functions_are_all_reported():
    found = errors('''
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            a = R.add(x, missing)
            b = R.shape(3)
            return b

        @R.function
        def g(x: R.Tensor((2,), "bogus")):
            return y
    ''')
    assert found == [
        (4, 18, "undefined variable 'missing'"),
        (5, 17, "R.shape takes a list of dimensions such as [n, 4]"),
        (9, 25, "unknown data type 'bogus'"),
        (10, 12, "undefined variable 'y'"),
    ]


def test_syntax_error_is_a_diagnostic():
    with pytest.raises(DiagnosticError) as caught:
        parse("@I.ir_module\nclass Module:\n    def f(:\n", "bad.relax")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.message.startswith("invalid syntax")
    assert (diagnostic.span.source, diagnostic.span.line) == ("bad.relax", 3)


def test_empty_file_is_an_error():
    found = errors("# nothing here\n", wrap=False)
    assert found == [(0, 0, "the file defines no module and no function")]


def test_unknown_callee_and_statement_only_forms():
    found = errors('''
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            a = np.add(x, x)
            b = R.func_attr({"a": 1})
            c = R.dataflow()
            return x
    ''')
    assert [m for _, _, m in found] == [
        "undefined variable 'np'",
        "R.func_attr(...) must be a statement at the start of a function body",
        "R.dataflow() opens a block: write `with R.dataflow():`",
    ]


def test_nested_function_errors_and_local_scope():
    found = errors('''
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            @R.function
            def inner(y: R.Tensor((2,), "float32")):
                z = R.add(y, w)
                return z
            v = R.add(z, x)
            return v
    ''')
    assert [m for _, _, m in found] == ["undefined variable 'w'", "undefined variable 'z'"]


def test_private_function_with_global_symbol():
    found = errors('''
        @R.function(private=True)
        def f(x: R.Tensor((2,), "float32")):
            R.func_attr({"global_symbol": "f"})
            return x
    ''')
    assert found == [(4, 5, "a private function has no global symbol; drop private=True or the attribute")]


def test_every_bad_argument_of_a_call_is_reported():
    found = errors('''
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            y = R.concat((a, x, b), axis=0)
            z = R.call_packed("f", c, d, sinfo_args=R.Object)
            return y
    ''')
    assert [(line, column) for line, column, _ in found] == [(4, 19), (4, 25), (5, 28), (5, 31)]


def test_match_cast_annotation_must_be_its_struct_info():
    """`a: R.Tensor((n, m)) = R.match_cast(x, R.Tensor((1, 1, 1)))` named n, m without
    defining them: relaxc exited 70 in VMShapeLower (issue 16). TVM's parser refuses it."""
    assert errors('''
        @R.function
        def main(x: R.Tensor(dtype="float32", ndim=3)):
            n = T.int64()
            m = T.int64()
            a: R.Tensor((n, m), dtype="float32") = R.match_cast(x, R.Tensor((1, 1, 1), dtype="float32"))
            b: R.Tensor((n, m, 1), dtype="float32") = R.match_cast(x, R.Tensor((n, m, 1), dtype="float32"))
            return b
    ''') == [(6, 8, "the annotation of 'a' differs from the struct info of its R.match_cast,"
                     " R.Tensor((1, 1, 1), dtype=\"float32\"); write the same or leave the annotation out")]


def test_const_values_must_fit_their_dtype():
    """R.const(1e39, "float32") compiled to inf and R.const(2**40) wrapped to 0, silently;
    an int beyond int64 exited 70 (issue 16). Infinity is spelled "inf"."""
    found = errors(f'''
        @R.function
        def main():
            a = R.const(1e39, "float32")
            b = R.const([1.0, -1e39])
            c = R.const(1099511627776)
            d = R.const([1180591620717411303424])
            e = R.const(300, "int8")
            f = R.const(1{"0" * 400}.0, "float64")
            g = R.const([{", ".join(["1.0"] * 99)}, 1e999], "float32")
            h = R.const("inf", "float32")
            return (a, b, c, d, e, f, g, h)
    ''')
    too_large = ("the float literal does not fit in float64 (largest finite value 1.7976931348623157e+308);"
                 " Python reads it as inf")
    assert found == [
        (4, 17, "1e+39 does not fit in float32 (largest finite value 3.4028234663852886e+38)"),
        (5, 17, "-1e+39 does not fit in float32 (largest finite value 3.4028234663852886e+38)"),
        (6, 17, "integer 1099511627776 does not fit in int32 (-2147483648 to 2147483647)"),
        (7, 17, "integer 1180591620717411303424 does not fit in int64 (-9223372036854775808 to 9223372036854775807)"),
        (8, 17, "integer 300 does not fit in int8 (-128 to 127)"),
        (9, 17, too_large),
        (10, 513, too_large),
    ]
