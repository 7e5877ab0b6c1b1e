"""bench/peers_report.py: the summary lines of bench/peers.py."""


def test_one_ratio_line_per_exec_mode(bench_script):
    """With --exec-mode both, the table's first relax row is the interpreter; the default path
    runs compiled, so each mode gets its own geometric mean (the compiled one used to go
    unreported)."""
    report = bench_script("peers_report")
    medians = {name: {"relax-interp": 2.0, "relax-compiled": 1.0, "numpy": 9.0, "onnxruntime": 4.0}
               for name in report.COMPUTE_WORKLOADS}
    medians["chain200"] = {"relax-interp": 1.0, "relax-compiled": 0.1, "onnxruntime": 1.0}
    interp, compiled = report.ratio_lines(medians)
    assert interp.startswith("# relax-interp / onnxruntime") and interp.endswith("geometric mean 0.500")
    assert compiled.startswith("# relax-compiled / onnxruntime") and compiled.endswith("geometric mean 0.250")
    assert "chain200" not in compiled


def test_a_single_mode_and_missing_peers(bench_script):
    report = bench_script("peers_report")
    medians = {"mlp_b1": {"relax": 1.0, "onnxruntime": 2.0}, "cnn": {"relax": 1.0, "numpy": 2.0}}
    assert report.ratio_lines(medians) == [
        "# relax / onnxruntime (medians of this run): mlp_b1 0.50; geometric mean 0.500, 1 of 6 workloads"]
    assert report.ratio_lines({"cnn": {"relax": 1.0, "numpy": 2.0}}) == []
