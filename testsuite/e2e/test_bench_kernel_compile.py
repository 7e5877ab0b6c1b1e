"""bench/kernel_compile.py: the kernel groups of a bench model, in relaxc's generation order,
each with its lowering, code generation and LLVM figures. Timings depend on the machine
and are not checked, only that every group is there and its figures are."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT.parent / "shared" / "bench"
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="shared/bench is not beside the checkout")


@pytest.fixture
def kernel_compile(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import kernel_compile

    return kernel_compile


def test_every_group_is_measured_in_generation_order(kernel_compile, capsys):
    from relax.codegen import build_kernels
    from relax.codegen.kernel_order import generation_groups
    from relax.target import host_target

    rows, steps = kernel_compile.measure("mlp_b1", host_target())
    funcs = build_kernels.prim_funcs(kernel_compile.lowered_module("mlp_b1"))
    assert [row[0] for row in rows] == [names[0] for names in generation_groups(funcs)]
    assert all(value > 0 for row in rows for value in row[1:])
    assert steps["schedules"] > 0 and steps["simplify"] > 0
    kernel_compile.report("mlp_b1", rows, steps)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "mlp_b1: kernel groups in generation order, ms (best of the runs)"
    assert "  total " in out and "lowering by step: " in out
