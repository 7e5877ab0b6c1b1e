"""Normalize's limits on struct info: nested tuples and callables (struct_info.MAX_NESTING),
and tensor sizes (struct_info.oversized_tensor).

The lowered module is TVMScript read back by Python's parser, which refuses more than
200 nested parentheses; a tuple nested 199 deep in the source printed one level per
tuple plus its tensor's, and relaxc failed with an internal error (issue 16). A tensor
of 9223372036854775807 x 2 float32 made the lowered module compute its byte size as an
int64 constant that does not fit: an internal error too.
"""

import pytest

from relax.diagnostics import DiagnosticError
from relax.ir.struct_info import MAX_NESTING, TensorStructInfo, TupleStructInfo, nesting_depth
from relax.script import parse, script
from relax.transform.normalize import Normalize

TENSOR = 'R.Tensor((4,), dtype="float32")'
HEADER = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"


def _module(params: str, body: list[str]) -> str:
    lines = ["    @R.function", f"    def main(x: {TENSOR}{params}):"] + [f"        {line}" for line in body]
    return HEADER + "\n".join(lines) + "\n"


def _chain(length: int) -> list[str]:
    """t{length - 1} nests `length` tuples around x."""
    return ["t0 = (x,)"] + [f"t{i} = (t{i - 1},)" for i in range(1, length)]


def _error(text: str):
    with pytest.raises(DiagnosticError) as caught:
        Normalize().run(parse(text, "nest.relax"))
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.message == (f"tuples or callables nest more than {MAX_NESTING} levels deep here;"
                                  f" at most {MAX_NESTING} are supported")
    return diagnostic.span


def test_a_deeply_nested_tuple_is_refused_at_its_binding():
    span = _error(_module("", ["y = " + "(" * 199 + "x" + ",)" * 199, "return x"]))
    assert (span.line, span.column) == (8, 13)


def test_nesting_built_up_by_bindings_is_refused_at_the_first_too_deep():
    span = _error(_module("", _chain(MAX_NESTING + 1) + ["return x"]))
    assert span.line == 8 + MAX_NESTING  # t64 = (t63,), t0 on line 8
    span = _error(_module("", _chain(MAX_NESTING) + [f"return (t{MAX_NESTING - 1},)"]))
    assert span.line == 8 + MAX_NESTING  # the return: the function's result type


def test_written_annotations_are_bounded_too():
    deep = TENSOR
    for _ in range(MAX_NESTING + 1):
        deep = f"R.Callable(({TENSOR},), {deep})"
    span = _error(_module(f", c: {deep}", ["return x"]))
    assert span.line == 7


def test_the_deepest_accepted_nesting_prints_and_reads_back():
    tuple_type, callable_type = TENSOR, TENSOR
    for _ in range(MAX_NESTING):
        tuple_type = f"R.Tuple({tuple_type})"
        callable_type = f"R.Callable(({TENSOR},), {callable_type})"
    body = _chain(MAX_NESTING) + [f"u = R.match_cast(t{MAX_NESTING - 1}, {tuple_type})", "v = c", "return u"]
    mod = Normalize().run(parse(_module(f", p: {tuple_type}, c: {callable_type}", body), "nest.relax"))
    printed = script(mod)
    assert script(parse(printed, "printed.relax")) == printed


def test_nesting_depth_counts_levels_not_nodes():
    info = TensorStructInfo(dtype="float32")
    for _ in range(200):  # 2**200 paths, 200 levels
        info = TupleStructInfo((info, info))
    assert nesting_depth(info) == MAX_NESTING + 1 and nesting_depth(info, limit=1000) == 200
    assert nesting_depth(TupleStructInfo(())) == 1 and nesting_depth(TensorStructInfo()) == 0


def _size_errors(text: str) -> list[tuple[int, int, str]]:
    with pytest.raises(DiagnosticError) as caught:
        Normalize().run(parse(text, "big.relax"))
    return [(d.span.line, d.span.column, d.message) for d in caught.value.diagnostics]


def test_a_tensor_whose_size_does_not_fit_in_int64_is_refused_where_written_or_inferred():
    big = 'R.Tensor((9223372036854775807, m), dtype="float32")'
    body = [
        "m = T.int64()",
        f"a = R.match_cast(x, {big})",
        'b: R.Tensor((4611686018427387904,), "int64") = R.zeros(R.shape([4611686018427387904]), "int64")',
        "c = R.add(p, R.permute_dims(p))",
        "return (a, b, c)",
    ]
    found = _size_errors(_module(', p: R.Tensor((4294967296, 1), "float32")', body))
    fits = "does not fit in int64 (at most 9223372036854775807)"
    assert found == [
        (9, 29, f"the size of R.Tensor((9223372036854775807, m), dtype=\"float32\"), 36893488147419103228 bytes, {fits}"),
        (10, 12, f"the size of R.Tensor((4611686018427387904,), dtype=\"int64\"), 36893488147419103232 bytes, {fits}"),
        (11, 13, f"the size of R.Tensor((4294967296, 4294967296), dtype=\"float32\"), 73786976294838206464 bytes, {fits}"),
    ]  # each once: what is computed from a refused value is not checked again


def test_the_largest_tensor_that_fits_is_accepted():
    mod = Normalize().run(parse(_module(', y: R.Tensor((2305843009213693951,), "float32")', ["return y"]), "big.relax"))
    assert mod["main"].params[1].struct_info.shape_values[0].value == 2**61 - 1
