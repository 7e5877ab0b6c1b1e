"""bench/fma_peak.py's parallel check, which bench/peers.py prints before and after its
workloads: a run whose threads shared their cores (a virtual machine's other core taken
for tens of milliseconds at a time) gets a warning instead of passing for the machine's
figures. And the Python loop bench/peers.py times between the rounds of a workload with
an interpreter row."""

import pytest


@pytest.fixture
def fma_peak(bench_script):
    return bench_script("fma_peak")


def test_cores_of_their_own_pass_without_a_warning(fma_peak):
    report = fma_peak.scaling_report([1.9, 1.95, 1.6, 1.88, 1.01], 2, "before the workloads")
    assert report == ("# parallel check before the workloads: 2 threads ran 1.01-1.95x one thread's FMA rate, "
                      "median 1.88 (5 samples, bench/fma_peak.py)")


def test_shared_cores_are_named_in_a_warning(fma_peak):
    report = fma_peak.scaling_report([1.0, 1.02, 1.9, 1.1, 1.05], 2, "after the workloads")
    first, warning = report.splitlines()
    assert "median 1.05" in first
    assert warning.startswith("# warning: the cores were shared after the workloads")
    assert "unreliable" in warning


def test_thread_scaling_times_pairs_of_runs(fma_peak):
    ratios = fma_peak.thread_scaling(2, samples=3, iterations=20_000)
    assert len(ratios) == 3 and all(ratio > 0 for ratio in ratios)  # values depend on the machine: not checked


def test_a_probe_runs_once_a_round_after_the_peers_batches(monkeypatch, bench_script):
    """bench/peers.py times a Python loop after each round of a workload with an interpreter
    row: one result per round, taken after every peer's batches of that round."""
    import numpy as np

    peers = bench_script("peers")

    events = []

    def batches_of(name):
        def run_batch(n):
            events.append(name)
            return [1000] * n
        return run_batch

    first, second = peers.Peer("a", batches_of("a"), np.zeros(1)), peers.Peer("b", batches_of("b"), np.zeros(1))
    probes = peers.measure([first, second], budget=0.0, settle=0.0, probe=lambda: events.append("probe") or 0.5)
    rounds = events[4:]  # after each peer's two estimating batches
    assert probes and probes == [0.5] * rounds.count("probe")
    for start in range(0, len(rounds), 5):  # a round: each peer's untimed and timed batch, then the probe
        assert sorted(rounds[start:start + 4]) == ["a", "a", "b", "b"] and rounds[start + 4] == "probe"
    assert len(first.times) >= 5 and len(second.times) >= 5
