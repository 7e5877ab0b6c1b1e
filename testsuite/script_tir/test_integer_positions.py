"""Loop bounds, buffer indices and buffer dimensions must be integers, as in TVM's parser.

A fuzzed kernel with `T.grid(8, 1e-45)` reached LLVM code generation, which emitted an
integer add of floats ("codegen produced invalid LLVM IR", exit 70); a float index made a
float-to-i64 cast LLVM refuses. Each is now an error at the offending expression.
"""

import pytest

from test_tir_errors import errors_of


@pytest.mark.parametrize("body, signature, expected", [
    ("for i, j in T.grid(8, 1e-45):\n    A[i, j] = T.float32(0)", None,
     [("3:27", "a loop bound must be an integer, not float32")]),
    ("for i in range(0.5, 8):\n    A[i, 0] = T.float32(0)", None,
     [("3:20", "a loop bound must be an integer, not float32")]),
    ("A[0, T.float32(1.5)] = T.float32(0)", None, [("3:10", "a buffer index must be an integer, not float32")]),
    ("A[0, 0] = A[T.bool(True), 0]", None, [("3:17", "a buffer index must be an integer, not bool")]),
    ("A[0] = T.float32(0)", 'A: T.Buffer((4.5,), "float32")', [("2:20", "a buffer dimension must be an integer, not float32")]),
])
def test_float_where_an_integer_is_needed(body, signature, expected):
    found = errors_of(body, signature) if signature else errors_of(body)
    assert found == expected
