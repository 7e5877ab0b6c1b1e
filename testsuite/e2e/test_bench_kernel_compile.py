"""bench/kernel_compile.py: the kernel groups of a bench model, in relaxc's generation order,
each with its lowering, code generation and LLVM figures. Timings depend on the machine
and are not checked, only that every group is there and its figures are."""

import pathlib

import pytest

SHARED_BENCH = pathlib.Path(__file__).resolve().parents[3] / "shared" / "bench"


@pytest.mark.skipif(not SHARED_BENCH.is_dir(), reason="shared/bench is not beside the checkout")
def test_every_group_is_measured_in_generation_order(bench_script, capsys):
    from relax.codegen import build_kernels
    from relax.codegen.kernel_order import generation_groups
    from relax.target import host_target

    kernel_compile = bench_script("kernel_compile")
    rows, steps = kernel_compile.measure("mlp_b1", host_target())
    funcs = build_kernels.prim_funcs(kernel_compile.lowered_module("mlp_b1"))
    assert [row[0] for row in rows] == [names[0] for names in generation_groups(funcs)]
    assert all(value > 0 for row in rows for value in row[1:])
    assert steps["schedules"] > 0 and steps["simplify"] > 0
    kernel_compile.report("mlp_b1", rows, steps)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "mlp_b1: kernel groups in generation order, ms (best of the runs)"
    assert "  total " in out and "lowering by step: " in out
