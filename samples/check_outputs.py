"""Runs a linked sample and compares its outputs with the expected ones (the Makefile's check).

    python check_outputs.py out/llvm/mlp.vmx data/mlp.inputs.npz data/mlp.expected.npz \
        [--plugin host_functions.py] [--atol 1e-5] [--rtol 1e-4]

The artifact is loaded with relax.vm.load (kernels for this host imported), `main`'s
parameters are bound by name from the inputs .npz, and the flattened results
(tuples depth first) are compared in order with the expected .npz keys 00, 01, ...
Prints `[SUCCESS] NAME` or `[FAILED] NAME: ...` and exits 0, or 3 on a mismatch (as
`relaxrun --expected-output` does), or 1 on an error. Only the runtime is imported.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import numpy as np


def flatten(value, out: list) -> list:
    if isinstance(value, (tuple, list)):
        for item in value:
            flatten(item, out)
    else:
        out.append(np.asarray(value))
    return out


def load_plugin(path: str) -> None:
    spec = importlib.util.spec_from_file_location("samples_plugin_" + os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def compare(name: str, outputs: list, expected, atol: float, rtol: float) -> str | None:
    """None when every output matches, else what differs first."""
    keys = sorted(expected.files)
    if len(outputs) != len(keys):
        return f"{len(outputs)} results, expected {len(keys)}"
    for index, key in enumerate(keys):
        got, want = outputs[index], expected[key]
        if got.shape != want.shape or got.dtype != want.dtype:
            return f"result[{index}]: got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
        if not np.allclose(got, want, atol=atol, rtol=rtol, equal_nan=True):
            error = np.abs(got.astype(np.float64) - want.astype(np.float64))
            where = np.unravel_index(int(np.argmax(error)), error.shape) if error.size else ()
            return f"result[{index}]: max abs error {error.max():.3g} at index {list(where)}"
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifact")
    parser.add_argument("inputs")
    parser.add_argument("expected")
    parser.add_argument("--plugin", action="append", default=[])
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args(argv)
    from relax.diagnostics import UserError
    from relax.vm import VirtualMachine, load

    name = os.path.splitext(os.path.basename(args.artifact))[0]
    try:
        for plugin in args.plugin:
            load_plugin(plugin)
        vm = VirtualMachine(load(args.artifact), "cpu")
        inputs = np.load(args.inputs)
        params = [vm.get_function_param_name("main", i) for i in range(vm.get_function_arity("main"))]
        outputs = flatten(vm["main"](*[inputs[p] for p in params]), [])
    except UserError as error:
        sys.stderr.write(f"check_outputs: error: {error}\n")
        return 1
    problem = compare(name, outputs, np.load(args.expected), args.atol, args.rtol)
    if problem is not None:
        print(f"[FAILED] {name}: {problem}")
        return 3
    print(f"[SUCCESS] {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
