"""Dispatch speed of the Relax VM interpreter, in nanoseconds per executed instruction.

    loop   a bytecode loop running one million Call instructions to a no-op packed
           function (100 calls per iteration, 10,000 iterations, plus 4 loop-control
           instructions per iteration)
    chain  a chain of 200 small bytecode functions, each calling a packed function and
           then the next function, run repeatedly (call, return and frame set-up cost)

Usage: .venv/bin/python bench/vm_dispatch.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time

from relax.runtime import register_func
from relax.vm import ExecBuilder, VirtualMachine

CALLS_PER_ITERATION = 100
ITERATIONS = 10_000
CHAIN_LENGTH = 200


def noop(*args):
    return None


def build_loop():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["iterations"]):
        ib.emit_call("vm.builtin.copy", args=[ib.imm(0)], dst=ib.r(1))                      # i = 0
        ib.emit_call("bench.lt", args=[ib.r(1), ib.r(0)], dst=ib.r(2))                       # loop: i < n
        ib.emit_if(ib.r(2), CALLS_PER_ITERATION + 3)
        for _ in range(CALLS_PER_ITERATION):
            ib.emit_call("bench.noop", args=[ib.r(1)])
        ib.emit_call("bench.add", args=[ib.r(1), ib.imm(1)], dst=ib.r(1))
        ib.emit_goto(-(CALLS_PER_ITERATION + 3))
        ib.emit_ret(ib.r(1))
    return ib.get()


def build_chain():
    ib = ExecBuilder()
    for index in range(CHAIN_LENGTH):
        with ib.function(f"step{index}", num_inputs=1):
            ib.emit_call("bench.add", args=[ib.r(0), ib.imm(1)], dst=ib.r(1))
            if index + 1 < CHAIN_LENGTH:
                ib.emit_call(f"step{index + 1}", args=[ib.r(1)], dst=ib.r(1))
            ib.emit_ret(ib.r(1))
    return ib.get()


def measure(function, args, instructions: int, repeat: int) -> float:
    """Best of `repeat` runs, in CPU time of this process (steadier than wall time on a busy host)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        function(*args)
        best = min(best, time.process_time() - start)
    return best * 1e9 / instructions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    register_func("bench.noop", noop, override=True)
    register_func("bench.add", lambda a, b: a + b, override=True)
    register_func("bench.lt", lambda a, b: a < b, override=True)

    loop = VirtualMachine(build_loop())["main"]
    loop_instructions = 1 + ITERATIONS * (CALLS_PER_ITERATION + 4) + 2 + 1
    assert loop(ITERATIONS) == ITERATIONS
    loop_ns = measure(loop, (ITERATIONS,), loop_instructions, options.repeat)

    chain = VirtualMachine(build_chain())["step0"]
    rounds = 500
    chain_instructions = CHAIN_LENGTH * 3 - 1
    assert chain(0) == CHAIN_LENGTH

    def chains(value):
        for _ in range(rounds):
            chain(value)

    chain_ns = measure(chains, (0,), chain_instructions * rounds, options.repeat)
    python_ns = measure(lambda: [noop(i) for i in range(1_000_000)], (), 1_000_000, options.repeat)
    print(f"loop : {loop_instructions} instructions ({ITERATIONS * CALLS_PER_ITERATION} no-op calls): "
          f"{loop_ns:.1f} ns/instruction")
    print(f"chain: {CHAIN_LENGTH} nested bytecode calls x {rounds}: {chain_ns:.1f} ns/instruction")
    print(f"reference: a Python loop calling the no-op function: {python_ns:.1f} ns/call")


if __name__ == "__main__":
    main()
