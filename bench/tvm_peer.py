"""TVM as a peer of bench/peers.py, in a side environment: never imported by the project.

    bench/peers.py --tvm-python /path/to/tvm-venv/bin/python

peers.py starts this script under that interpreter (one where `pip install apache-tvm`
was run), so the toolchain's own process never loads TVM. Protocol, one JSON object
per line:

    argv:    WORKLOAD.relax  PARAMS.npz|-  INPUTS.npz  OUTPUT.npz
    stdout:  {"ready": true}            after tvm.compile; the first result is in OUTPUT.npz
    stdin:   N                          -> stdout: [ns, ns, ...] for N timed calls of main
    stdin:   (end of input)             -> exit
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def main(argv) -> int:
    import tvm
    from tvm import relax

    source, params_path, inputs_path, output_path = argv
    with open(source) as file:
        mod = tvm.script.from_source(file.read())
    if params_path != "-":
        weights = {k: tvm.runtime.tensor(v) for k, v in np.load(params_path).items()}
        mod = relax.transform.BindParams("main", weights)(mod)
    inputs = np.load(inputs_path)
    args = [tvm.runtime.tensor(inputs[name]) for name in sorted(inputs.files)]
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    main_function = vm["main"]
    np.savez(output_path, out=main_function(*args).numpy())
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        times = []
        for _ in range(int(line)):
            start = time.perf_counter_ns()
            main_function(*args)
            times.append(time.perf_counter_ns() - start)
        print(json.dumps(times), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
