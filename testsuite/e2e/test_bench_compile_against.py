"""bench/compile.py --relaxc --against: cold builds of two checkouts alternated, with the
paired ratios. A checkout against itself builds the same bytes both ways; the table
has a row per model with both medians (wall and CPU) and the two ratios. Timings
depend on the machine and are not checked, only that they are there and positive."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT.parent / "shared" / "bench"
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="shared/bench is not beside the checkout")


@pytest.fixture
def compile_bench(bench_script):
    return bench_script("compile")


def test_a_checkout_against_itself_builds_the_same_bytes(compile_bench, capsys):
    compile_bench.relaxc_against(["mlp_b1"], 2, ROOT)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"# {ROOT}: ") and lines[1].startswith(f"# {ROOT}: ")
    assert lines[2] == "cold relaxc one-shot, 2 rounds, the two trees alternated (which goes first alternates too)"
    row = next(line for line in lines if line.startswith("mlp_b1 ")).split()
    assert len(row) == 9 and row[-1] == "yes"
    assert all(float(value) > 0 for value in row[1:6] + row[7:8])
    assert row[6] == "-"  # two rounds give no 95% interval


def test_a_run_reports_wall_and_cpu_time_of_the_child(compile_bench, tmp_path):
    wall, cpu = compile_bench.time_relaxc("mlp_b1", tmp_path / "mlp_b1.vmx", dict(os.environ, RELAX_CACHE="0"))
    assert (tmp_path / "mlp_b1.vmx").stat().st_size > 0
    assert wall > 0 and cpu > 0  # the child's own CPU time, not this process's


def test_the_trees_alternate_and_the_ratios_pair_the_rounds(compile_bench, capsys, monkeypatch, tmp_path):
    calls = []

    def fake(model, output, environment, tree):
        calls.append(tree)
        output.write_bytes(b"same")
        return (1.0, 2.0) if tree == compile_bench.ROOT else (4.0, 5.0)

    monkeypatch.setattr(compile_bench, "time_relaxc", fake)
    compile_bench.relaxc_against(["mlp_b1"], 3, tmp_path)
    this, other = compile_bench.ROOT, tmp_path
    assert calls == [this, other, other, this, this, other]
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("mlp_b1 ")).split()
    assert row[1:] == ["1.00", "2.00", "4.00", "5.00", "0.250", "-", "0.400", "yes"]


def test_the_wall_ratio_has_an_interval_from_the_rounds_order(compile_bench, capsys, monkeypatch, tmp_path):
    walls = {compile_bench.ROOT: iter([1.0, 1.1, 1.2, 0.9, 1.3, 1.4]), tmp_path: iter([2.0] * 6)}

    def fake(model, output, environment, tree):
        output.write_bytes(b"same")
        return next(walls[tree]), 1.0

    monkeypatch.setattr(compile_bench, "time_relaxc", fake)
    compile_bench.relaxc_against(["mlp_b1"], 6, tmp_path)
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("mlp_b1 ")).split()
    # Six rounds: the interval runs from the smallest ratio to the largest.
    assert row[6] == "0.450-0.700"


def test_the_median_interval_takes_the_binomial_order_statistics(compile_bench):
    assert compile_bench.median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) is None  # 2/32 > 5%: no 95% interval
    assert compile_bench.median_interval(list(range(10, 0, -1))) == (2, 9)  # P(X <= 1) = 11/1024
    assert compile_bench.median_interval(list(range(1, 65))) == (24, 41)
    assert compile_bench.median_interval(list(range(1, 65)), confidence=0.5) == (29, 36)


def test_the_python_loop_reference_is_the_best_of_its_timings(compile_bench, monkeypatch):
    import fma_peak

    ticks = iter([0.0, 2.0, 10.0, 11.5, 20.0, 23.0])
    monkeypatch.setattr(fma_peak, "PYTHON_LOOP", 10)
    monkeypatch.setattr(fma_peak.time, "perf_counter", lambda: next(ticks))
    assert fma_peak.python_loop_seconds() == 1.5


@pytest.mark.parametrize("host", [None, "avx2"])
def test_a_host_shown_as_avx2_is_shown_so_to_either_tree(compile_bench, monkeypatch, tmp_path, host):
    seen = []
    monkeypatch.setattr(compile_bench.subprocess, "run", lambda command, env, cwd, check: seen.append(env))
    environment = dict(os.environ, RELAX_CACHE="0")
    environment.pop("RELAX_TEST_HOST", None)
    if host:
        environment["RELAX_TEST_HOST"] = host
    compile_bench.time_relaxc("mlp_b1", tmp_path / "mlp_b1.vmx", environment, tmp_path)
    paths = seen[0]["PYTHONPATH"].split(os.pathsep)
    tree = [str(tmp_path / "lib"), str(tmp_path)]
    assert paths == ([str(ROOT / "testsuite" / "avx2_host")] + tree if host else tree)
