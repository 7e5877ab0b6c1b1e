"""The memos that speed up a build without changing what it computes (issue 18):
tir/rewrite.collect's cache of recent answers, structural_key against
structural_equal, and referenced_keys' first-use order against a recursive walk."""

import dataclasses

from tir_builders import matmul_func

from relax.codegen.parallel import referenced_keys
from relax.ir import tir
from relax.ir.node import Node
from relax.ir.structural import structural_equal, structural_key
from relax.tir import lower_for_codegen, rewrite
from relax.tir.rewrite import collect


def test_collect_answers_again_with_a_fresh_list_and_stays_bounded():
    body = matmul_func(7, 5, 3).body
    first = collect(body, tir.For)
    first.append("changed by the caller")
    again = collect(body, tir.For)
    assert again == first[:-1] and again is not first
    for extent in range(rewrite._COLLECTED_MAX + 8):  # more distinct questions than the memo holds
        collect(matmul_func(extent + 1, 2, 2).body, tir.BufferStore)
    assert len(rewrite._COLLECTED) <= rewrite._COLLECTED_MAX
    assert collect(body, tir.For) == again


def test_structural_key_agrees_with_structural_equal():
    funcs = [matmul_func(4, 4, 4), matmul_func(4, 4, 4), matmul_func(4, 4, 8)]
    for a in funcs:
        for b in funcs:
            assert (structural_key(a) == structural_key(b)) == structural_equal(a, b)


def _reference_keys(node, found, seen) -> None:
    """The recursive walk referenced_keys replaced: pre-order, each node once."""
    if isinstance(node, (tuple, list)):
        for item in node:
            _reference_keys(item, found, seen)
        return
    if not isinstance(node, Node) or id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, tir.Var):
        found.setdefault(node, None)
    if isinstance(node, tir.Buffer) and node.data is None:
        found.setdefault(("buffer", node.name), None)
    for field in dataclasses.fields(node):
        if field.name != "span":
            _reference_keys(getattr(node, field.name), found, seen)


def test_referenced_keys_in_the_order_of_a_recursive_walk():
    body = lower_for_codegen(matmul_func(16, 4, 8), None).body
    expected: dict = {}
    _reference_keys(body, expected, set())
    assert list(referenced_keys(body, {})) == list(expected)
