"""Kernels read as signatures only leave their loops out of what Python's `ast` reads
(script/signature_bodies.py): every line stays where it was, the reader gets the same
module, and a text the cut cannot handle is read whole."""

from __future__ import annotations

import ast
import pathlib

import pytest

from relax.diagnostics import DiagnosticError
from relax.driver.assemble import generate_bytecode, read_vms
from relax.driver.compile_steps import CompileOptions, check_module, parse_source, run_pipeline
from relax.driver.printed_kernels import as_printed
from relax.script import array_literals, parse, parser, script
from relax.script.signature_bodies import without_bodies
from relax.transform.pipeline import pipeline

ROOT = pathlib.Path(__file__).resolve().parents[2]

KERNELS = '''\
from tvm.script import ir as I
from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def scale(a: T.handle, s: T.float32):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        T.func_attr({"tirx.noalias": True, "op_pattern": 0})
        for i in range(n):
            # a comment inside the loop
            A[i] = A[i] * s

    @T.prim_func(private=True)
    def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[i]
'''


def test_the_loops_go_and_every_line_stays():
    cut = without_bodies(KERNELS, {"scale", "copy"})
    lines, original = cut.split("\n"), KERNELS.split("\n")
    assert len(lines) == len(original)
    kept = [line for line in lines if line.strip()]
    assert "        n = T.int64()" in kept and '        A = T.match_buffer(a, (n,), "float32")' in kept
    assert not any("for i" in line or "A[i] = " in line for line in kept)
    # copy's body was one loop: a def needs a statement, so its header line becomes `pass`.
    assert lines[original.index("        for i in range(4):")] == "        pass"
    ast.parse(cut)


def test_only_the_named_functions_are_cut():
    cut = without_bodies(KERNELS, {"scale"})
    assert "            B[i] = A[i]" in cut.split("\n") and "A[i] = A[i] * s" not in cut


@pytest.mark.parametrize("body", [
    '        T.func_attr({"tirx.noalias": True,\n                     "op_pattern": 0})\n',  # a bracket left open
    "        n = \\\n            T.int64()\n",                                                # a backslash
    '        s = """text"""\n',                                                                   # a triple quote
])
def test_a_function_with_a_continued_line_is_left_whole(body):
    text = KERNELS.replace('        T.func_attr({"tirx.noalias": True, "op_pattern": 0})\n', body)
    assert without_bodies(text, {"scale"}).split("\n")[:20] == text.split("\n")[:20]


def test_a_syntax_error_is_reported_from_the_whole_text(monkeypatch):
    monkeypatch.setattr(parser, "without_bodies", lambda text, names: text.replace("for i", "for for"))
    # The cut text would not parse: the whole text is read, as if there were no cut.
    assert parse(KERNELS, "m.vms", signatures_only={"scale"})["scale"].attrs["op_pattern"] == 0
    broken = KERNELS.replace("A[i] = A[i] * s", "A[i] = = s")
    with pytest.raises(DiagnosticError) as raised:
        parse(broken, "m.vms", signatures_only={"scale"})
    assert raised.value.diagnostics[0].span.line == KERNELS.split("\n").index("            A[i] = A[i] * s") + 1


@pytest.mark.parametrize("sample", sorted(p.name for p in (ROOT / "samples").glob("*.relax")))
def test_the_one_shot_reads_the_same_module_with_and_without_the_cut(sample, monkeypatch):
    mod = parse_source(str(ROOT / "samples" / sample))
    check_module(mod)
    lowered = run_pipeline(mod, CompileOptions(source=sample), tuple(pipeline(2)))
    deferred, printed = {}, {}
    with array_literals.printing(deferred):
        text = script(lowered, printed)
    kept = as_printed(lowered, printed)
    read = []
    for cut in (without_bodies, lambda text, names: text):
        monkeypatch.setattr(parser, "without_bodies", cut)
        with array_literals.reading(dict(deferred)):
            module = read_vms(text, "model.vms", signatures_only=kept)
        read.append((script(module), generate_bytecode(module, "model.vms").save_to_bytes()))
    assert read[0] == read[1]
