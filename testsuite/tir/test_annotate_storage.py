"""annotate-storage: constant small allocations on the stack, the rest in the workspace."""

import pytest

from relax.ir import tir
from relax.tir.annotate_storage import STACK_LIMIT_BYTES, STORAGE_KEY, AnnotateStorage
from relax.tir.rewrite import collect

from tir_builders import buffer, i32, prim_func


def _alloc(extent, dtype="float32", scope="global"):
    data = tir.Var("T", "handle")
    return tir.Allocate(data, dtype, (extent,), tir.IntImm("bool", 1), tir.Evaluate(i32(0)), scope=scope)


@pytest.mark.parametrize("extent, dtype, expected", [
    (i32(256), "float32", "stack"),
    (i32(STACK_LIMIT_BYTES // 4), "float32", "stack"),
    (i32(STACK_LIMIT_BYTES // 4 + 1), "float32", "workspace"),
    (i32(STACK_LIMIT_BYTES // 8 + 1), "float64", "workspace"),
    (tir.Mul(tir.Var("n"), i32(4)), "float32", "workspace"),
    (i32(16), "float32", "stack"),
])
def test_storage_by_size(extent, dtype, expected):
    func = prim_func([buffer("A", (1,))], _alloc(extent, dtype))
    alloc = collect(AnnotateStorage().run(func).body, tir.Allocate)[0]
    assert alloc.annotations[STORAGE_KEY] == expected


def test_gpu_scopes_keep_their_scope_name():
    func = prim_func([buffer("A", (1,))], _alloc(i32(64), scope="shared"))
    alloc = collect(AnnotateStorage().run(func).body, tir.Allocate)[0]
    assert alloc.annotations[STORAGE_KEY] == "shared"


def test_nested_allocations_are_all_annotated_and_input_unchanged():
    inner = _alloc(i32(4))
    outer = _alloc(i32(1 << 20)).with_fields(body=inner)
    func = prim_func([buffer("A", (1,))], outer)
    after = AnnotateStorage().run(func)
    assert [a.annotations[STORAGE_KEY] for a in collect(after.body, tir.Allocate)] == ["workspace", "stack"]
    assert STORAGE_KEY not in func.body.annotations
