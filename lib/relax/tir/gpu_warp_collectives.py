"""The warp-level collectives of the GPU simulator (gpu_simulator.py): a shuffle among the
active lanes of each warp, and the tensor cores' mma of each warp's fragments.

Each takes the simulator of a block (`sim`: its thread count, active mask and storage) and
the call, and returns the call's value.
"""

from __future__ import annotations

import numpy as np

from .gpu_schedule.matmul_mma import a_fragment_at, b_fragment_at, c_fragment_at

WARP_SIZE = 32


def _error(message: str):
    from .gpu_simulator import SimulatorError  # the simulator imports this module

    return SimulatorError(message)


def shuffle(sim, call):
    """`tvm_warp_shuffle` / `tvm_warp_shuffle_down`: each active lane's value from the lane it names."""
    value = sim.eval(call.args[1])
    offset, width = (sim._of_active(sim.eval(arg)) for arg in call.args[2:4])
    threads = sim.active
    lanes = threads % WARP_SIZE
    if call.op == "tir.tvm_warp_shuffle":
        sources = lanes - lanes % width + offset % width
    else:
        sources = np.where(lanes % width + offset < width, lanes + offset, lanes)
    readers = threads - lanes + sources
    present = (sources >= 0) & (sources < WARP_SIZE) & (readers < sim.count)
    present &= sim.mask[np.clip(readers, 0, sim.count - 1)]
    if not present.all():
        i = int(np.argmax(~present))
        raise _error(f"lane {lanes[i]} reads lane {sources[i]}, which has left the warp or is not at the shuffle")
    if not isinstance(value, np.ndarray):
        return value
    result = value.copy()
    result[threads] = value[readers]
    return result


def mma(sim, call):
    """`tir.ptx_mma` m16n8k16 row.col, float16 throughout: every warp's D = A @ B + C from
    its lanes' fragments (the layout PTX defines, matmul_mma.py), in float32, rounded once."""
    form = tuple(arg.value for arg in call.args[:6])
    if form != ("m16n8k16", "row", "col", "fp16", "fp16", "fp16"):
        raise _error(f"ptx_mma {' '.join(form)} is not simulated (only m16n8k16 row col fp16)")
    if not sim.converged or sim.count % WARP_SIZE:
        raise _error("ptx_mma needs every lane of every warp (a whole number of warps, none left out)")
    (a, a_at), (b, b_at), (acc, c_at) = ((sim.storage[call.args[n]], sim._of_active(sim.eval(call.args[n + 1])))
                                         for n in (6, 8, 10))
    lanes = np.arange(sim.count) % WARP_SIZE
    warps, g, t2 = np.arange(sim.count) // WARP_SIZE, lanes // 4, lanes % 4 * 2
    count = sim.count // WARP_SIZE
    left, right, total = (np.zeros((count, *shape), np.float32) for shape in ((16, 16), (16, 8), (16, 8)))
    for e in range(8):
        rows, cols = a_fragment_at(e)
        left[warps, g + rows, t2 + cols] = a[:, a_at + e]
    for e in range(4):
        right[warps, t2 + b_fragment_at(e), g] = b[:, b_at + e]
    for e in range(4):
        rows, cols = c_fragment_at(e)
        total[warps, g + rows, t2 + cols] = acc[:, c_at + e]
    result = (left @ right + total).astype(acc.dtype)
    for e in range(4):
        rows, cols = c_fragment_at(e)
        acc[:, c_at + e] = result[warps, g + rows, t2 + cols]
    return 0
