"""The samples the suite builds into artifacts and runs: samples/*.relax with inputs in
samples/data/NAME.inputs.npz. py_func.relax is left out: its main is a Python function,
run just in time by relax.BasePyModule (testsuite/py_module and `make samples`)."""

import pathlib

SAMPLES = pathlib.Path(__file__).resolve().parents[1] / "samples"
ARTIFACT_SAMPLES = sorted(p.stem for p in SAMPLES.glob("*.relax") if (SAMPLES / "data" / f"{p.stem}.inputs.npz").exists())
