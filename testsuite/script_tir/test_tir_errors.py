"""Errors of the TIR parser: message and position, several per function."""

import textwrap

import pytest

from tir_helpers import prim_func


def errors_of(body, signature='A: T.Buffer((8, 8), "float32")', decorator="@T.prim_func(s_tir=True)"):
    text = f"{decorator}\ndef f({signature}):\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ") + "\n"
    return prim_func(text)[1]


@pytest.mark.parametrize(
    "body, expected",
    [
        ("A[0] = T.float32(0)", [("3:5", "buffer 'A' has 2 dimensions but is indexed with 1 index")]),
        ("A[0, 0] = x", [("3:15", "undefined variable 'x'")]),
        ("A[0, 0] = T.expp(A[0, 0])", [("3:15", "unknown TIR function 'T.expp'; did you mean 'T.exp'?")]),
        ("for i in T.serail(8):\n    A[i, 0] = T.float32(0)",
         [("3:14", "'T.serail' is not a TIR loop; expected range, T.grid, T.serial, T.parallel, T.vectorized, T.unroll, T.thread_binding")]),
        ("for i, j in T.grid(8):\n    A[i, j] = T.float32(0)", [("3:9", "T.grid has 1 extents but 2 loop variables")]),
        ("T.reads(A[0, 0])", [("3:5", "T.reads belongs inside a block")]),
        ("for i, j in T.grid(8, 8):\n    with T.sblock('b'):\n        vi, vj = T.axis.remap('SX', [i, j])",
         [("5:35", "unknown axis kind 'X' in T.axis.remap; expected 'S' or 'R'")]),
        ("for i, j in T.grid(8, 8):\n    with T.sblock('b'):\n        vi, vj = T.axis.remap('S', [i, j])",
         [("5:22", "T.axis.remap binds 2 names with 1 kind and 2 loop variables")]),
        ("for i in range(8):\n    with T.sblock('b'):\n        vi, vj = T.axis.remap('SS', [i, i + 1])",
         [("5:45", "T.axis.remap takes loop variables; 'i + 1' is not one")]),
        ("for i in range(8):\n    with T.sblock('b'):\n        vi = T.axis.sptial(8, i)",
         [("5:18", "unknown TIR function 'T.axis.sptial'; did you mean 'T.axis.spatial'?")]),
        ("B = T.alloc_buffer((8,), 'float33')", [("3:30", "unknown data type 'float33'")]),
        ("x: T.handle = 0", [("3:8", "a handle cannot be a local scalar; write T.let[T.handle]")]),
        ("with T.foo():\n    T.evaluate(0)", [("3:10", "'T.foo' cannot open a 'with' frame in TIR")]),
        ("try:\n    T.evaluate(0)\nexcept E:\n    pass", [("3:5", "'try' statements are not supported in TIR")]),
        ("h, w = T.int32(), 3", [("3:23", "only T.axis.remap and declarations such as `h, w = T.int32(), T.int32()` "
                                          "assign several names in TIR")]),
        ("h, w = T.int32(), T.int32(), T.int32()", [("3:5", "2 names but 3 values")]),
    ],
)
def test_statement_errors(body, expected):
    assert errors_of(body) == expected


def test_signature_errors():
    assert errors_of("T.evaluate(0)", signature="a, b: T.int33") == [
        ("2:7", "parameter 'a' needs a type annotation such as T.int32 or T.Buffer(...)"),
        ("2:13", "parameter 'b' has an unknown type; expected T.Buffer(...), T.handle or a scalar type such as T.int32"),
    ]
    assert errors_of("T.evaluate(0)", decorator="@T.prim_func(privat=True)") == [
        ("1:14", "unknown option 'privat' of T.prim_func; expected private or s_tir"),
    ]


def test_independent_errors_are_all_reported():
    errors = errors_of("""
        A[0] = T.float32(0)
        for i in range(8):
            A[i, 0] = y
        A[0, 0] = T.exp(A[0, 0], 1)
    """)
    assert [position for position, _ in errors] == ["3:5", "5:19", "6:15"]


def test_a_broken_parameter_is_reported_once():
    assert errors_of("B[0] = A[0, 0]\nB[1] = B[0]", signature='A: T.Buffer((8, 8), "float32"), B: T.Buffer((4,), "float33")') == [
        ("2:57", "unknown data type 'float33'"),
    ]


def test_a_failed_declaration_is_reported_once():
    assert errors_of('''
        B = T.alloc_buffer((8,), "float33")
        B[0] = A[0, 0]
        x = T.expp(A[0, 0])
        A[0, 0] = x + B[1]
    ''') == [("3:30", "unknown data type 'float33'"), ("5:9", "unknown TIR function 'T.expp'; did you mean 'T.exp'?")]


def test_a_handle_is_not_a_number():
    """A handle (a pointer) in arithmetic, or converted to or from a number, made LLVM code
    generation fail (`uitofp ptr`): relaxc exited 70 (issue 16). Comparing handles stays."""
    handles = 'A: T.Buffer((4,), "handle"), B: T.Buffer((4,), "handle"), C: T.Buffer((4,), "float32")'
    assert errors_of("""
        C[0] = A[0] + C[1]
        A[0] = A[1] + B[1]
        C[0] = A[0]
        A[0] = T.Cast("handle", C[0])
        A[0] = -B[0]
        A[0] = A[1] & B[1]
        C[0] = T.Select(A[0] == B[0], C[1], C[2])
    """, signature=handles) == [
        ("3:12", "a handle (a pointer) cannot be combined with a value of type float32"),
        ("4:12", "arithmetic cannot take a handle (a pointer)"),
        ("5:12", "a value of type handle cannot be converted to float32: a handle (a pointer) is not a number"),
        ("6:12", "a value of type float32 cannot be converted to handle: a handle (a pointer) is not a number"),
        ("7:12", "negation cannot take a handle (a pointer)"),
        ("8:12", "operator '&' cannot take a handle (a pointer)"),
    ]


def test_a_float_literal_beyond_float64_is_refused():
    """Python reads 1e999 (or a float of thousands of digits) as inf: it compiled silently
    to infinity (issue 16). Infinity is written T.float32("inf")."""
    message = ("the float literal does not fit in float64 (largest finite value 1.7976931348623157e+308);"
               " Python reads it as inf")
    assert errors_of(f"""
        A[0, 0] = T.float32(1{"0" * 400}.0)
        A[0, 1] = 1e999
        A[0, 2] = T.float32("inf")
    """) == [("3:25", message), ("4:15", message)]
