"""bench/matmul_shapes.py runs: a small shape for this host's schedule targets, checked
against numpy before it is timed, one short round."""

import pytest

from cpu_targets import SCHEDULE_TARGETS


def test_a_small_shape_for_the_schedule_targets(monkeypatch, capsys, bench_script):
    monkeypatch.setenv("RELAX_NUM_THREADS", "1")
    matmul_shapes = bench_script("matmul_shapes")

    targets = [t.values[0] for t in SCHEDULE_TARGETS if not t.marks]
    argv = ["37x50x70", "--rounds", "1", "--batch-ms", "1"] + [arg for t in targets for arg in ("--target", t)]
    assert matmul_shapes.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "37x50x70"
    rows = lines[2:]
    assert len(rows) == len(targets) + 1
    assert all(row.strip().startswith(peer) and "GFLOP/s" in row for row, peer in zip(rows, targets + ["numpy"]))


def test_a_malformed_shape_is_refused(bench_script):
    matmul_shapes = bench_script("matmul_shapes")

    with pytest.raises(SystemExit):
        matmul_shapes.main(["37x50"])
