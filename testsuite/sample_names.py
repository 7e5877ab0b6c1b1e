"""The samples the suite builds into artifacts and runs: samples/*.relax with inputs in
samples/data/NAME.inputs.npz. py_func.relax is left out: its main is a Python function,
run just in time by relax.BasePyModule (testsuite/py_module and `make samples`).

WORKER_SAMPLES are written for several workers (their R.ccl.* collectives shard the
weights): alone they stop at the first scatter, so the single-VM tests leave them out and
testsuite/disco runs them with `relaxrun --workers N` and `mpiexec -n N relaxrun --mpi`."""

import pathlib

SAMPLES = pathlib.Path(__file__).resolve().parents[1] / "samples"
WORKER_SAMPLES = {"tp_mlp": 2, "tp_mlp_annotated": 2}  # name -> the number of workers it is written for
ARTIFACT_SAMPLES = sorted(p.stem for p in SAMPLES.glob("*.relax")
                          if (SAMPLES / "data" / f"{p.stem}.inputs.npz").exists() and p.stem not in WORKER_SAMPLES)
