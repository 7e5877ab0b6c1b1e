"""Every TVMScript input of the project parses: samples, the TVM-printed corpus, bench models.

Files whose constants TVM left in an omitted metadata section cannot be read by TVM
either; they must fail with a diagnostic, not a crash.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from relax import ir
from relax.diagnostics import DiagnosticError
from relax.script import parse

REPO = pathlib.Path(__file__).resolve().parents[2]
INPUTS = sorted(
    [*REPO.glob("samples/*.relax"), *REPO.glob("testsuite/corpus/*.tvmscript"), *REPO.parent.glob("shared/bench/*.relax")]
)


def _needs_metadata(text: str) -> bool:
    return "metadata[" in text


def _prim_func_lines(text: str) -> list[range]:
    """The line ranges of the file's @T.prim_func functions."""
    ranges = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and any("prim_func" in ast.unparse(d) for d in node.decorator_list):
            ranges.append(range(node.lineno, node.end_lineno + 1))
    return ranges


def _parse_or_xfail_in_tir(text: str, name: str):
    """Parses; errors that all lie inside PrimFuncs belong to the TIR parser (tested in
    testsuite/script_tir) and mark the input as an expected failure here."""
    try:
        return parse(text, name)
    except DiagnosticError as error:
        kernels = _prim_func_lines(text)
        located = [d for d in error.diagnostics if d.severity == "error"]
        if kernels and all(d.span and any(d.span.line in r for r in kernels) for d in located):
            pytest.xfail(f"TIR parser: {located[0].message}")
        raise


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_input_parses(path: pathlib.Path):
    text = path.read_text()
    if _needs_metadata(text):
        with pytest.raises(DiagnosticError) as caught:
            _parse_or_xfail_in_tir(text, str(path))
        assert all("metadata" in d.message or "struct info" in d.message for d in caught.value.diagnostics)
        return
    mod = _parse_or_xfail_in_tir(text, str(path))
    assert isinstance(mod, ir.IRModule)
    assert len(mod.functions) >= 1
    for name, func in mod.functions.items():
        if isinstance(func, ir.Function):
            assert isinstance(func.body, ir.SeqExpr)
            assert all(isinstance(p, ir.Var) for p in func.params)


def test_inputs_were_found():
    assert any(p.suffix == ".relax" for p in INPUTS)
