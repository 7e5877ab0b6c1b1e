"""Runs samples/py_func.relax, a module with a Python function, just in time, and
checks it against numpy: `make -C samples check` runs it after the compiled samples.

    python py_func_run.py [--atol A] [--rtol R]

relax.BasePyModule compiles the module's PrimFunc and Relax function for this host
and runs `main`, the Python function, in Python. `main` calls `my_softmax` through
call_dps_packed; that function is the user's, registered here as relaxrun --plugin
files register theirs.
"""

import argparse
import pathlib
import sys

import numpy as np

import relax
from relax.runtime import register_func
from relax.script import parse

HERE = pathlib.Path(__file__).resolve().parent


@register_func("my_softmax", override=True)
def my_softmax(x, axis, out):
    """Destination-passing softmax along `axis`."""
    shifted = np.exp(x - x.max(axis=axis, keepdims=True))
    out[...] = shifted / shifted.sum(axis=axis, keepdims=True)


def expected(x, w):
    relu = np.maximum(x @ w, 0)
    shifted = np.exp(relu - relu.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--atol", type=float, default=1e-5)
    options.add_argument("--rtol", type=float, default=1e-4)
    args = options.parse_args()
    path = HERE / "py_func.relax"
    module = relax.BasePyModule(parse(path.read_text(), str(path)), device="cpu")
    rng = np.random.default_rng(0)
    for batch in (1, 5):  # `n` is symbolic: one build serves every batch size
        x = rng.standard_normal((batch, 16), dtype=np.float32)
        w = rng.standard_normal((16, 20), dtype=np.float32)
        got = module.main(x, w)
        if not np.allclose(got, expected(x, w), atol=args.atol, rtol=args.rtol):
            print(f"py_func: batch {batch}: mismatch, max error {np.abs(got - expected(x, w)).max()}",
                  file=sys.stderr)
            return 1
    print("py_func: main (a Python function) matches numpy for batch sizes 1 and 5")
    return 0


if __name__ == "__main__":
    sys.exit(main())
