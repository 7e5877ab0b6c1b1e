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
