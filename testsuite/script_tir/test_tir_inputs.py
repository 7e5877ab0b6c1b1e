"""Every PrimFunc of the project's TVMScript inputs (the TVM-printed corpus, the
samples, the shared benchmarks) parses without a diagnostic."""

import ast
import pathlib

import pytest

from relax.ir import GlobalVar, tir
from relax.script.context import ModuleRef, ParseContext, Scope
from relax.script.ast_nodes import METADATA_MESSAGE
from relax.script.tir_parser import is_prim_func, parse_prim_func

REPO = pathlib.Path(__file__).resolve().parents[2]
INPUTS = sorted(
    [*REPO.glob("samples/*.relax"), *REPO.glob("testsuite/corpus/*.tvmscript"), *REPO.parent.glob("shared/bench/*.relax")]
)
# Inputs the TIR parser does not read yet, with the reason.
KNOWN_GAPS = {
    "tir_casts_and_dtypes.tvmscript": "float8_e4m3fn is not a dtype of relax.ir.dtype yet",
}


def prim_funcs_of(path: pathlib.Path):
    text = path.read_text()
    ctx = ParseContext(str(path), text)
    tree = ast.parse(text)
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    scope = Scope()
    global_vars = {d.name: GlobalVar(d.name) for d in defs}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        scope.define(cls.name, ModuleRef(cls.name, global_vars))
    funcs = [parse_prim_func(d, ctx, scope) for d in defs if is_prim_func(d, ctx)]
    return funcs, ctx.diagnostics


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_prim_funcs_parse(path):
    if path.name in KNOWN_GAPS:
        pytest.xfail(KNOWN_GAPS[path.name])
    funcs, diagnostics = prim_funcs_of(path)
    # Only values TVM left out of the text (metadata[...]) may fail.
    assert [f"{d.span}: {d.message}" for d in diagnostics if d.message != METADATA_MESSAGE] == []
    for func in funcs:
        assert isinstance(func, tir.PrimFunc)
        assert all(any(param is p for p in func.params) for param, _ in func.buffer_map)


@pytest.mark.parametrize("name", sorted(KNOWN_GAPS))
def test_known_gaps_still_fail(name):
    """When a gap closes, this fails: move the input out of KNOWN_GAPS."""
    _, diagnostics = prim_funcs_of(REPO / "testsuite" / "corpus" / name)
    assert diagnostics


def test_host_code_fails_only_on_missing_metadata():
    _, diagnostics = prim_funcs_of(REPO / "testsuite" / "corpus" / "tir_after_default_tir_pipeline.tvmscript")
    assert diagnostics and all(d.message == METADATA_MESSAGE for d in diagnostics)


def test_inputs_have_prim_funcs():
    assert sum("T.prim_func" in p.read_text() for p in INPUTS) >= 20
