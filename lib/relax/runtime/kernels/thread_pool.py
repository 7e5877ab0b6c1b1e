"""The process-wide thread pool that parallel loops of kernels run on.

A kernel's parallel loop calls `__relax_pool_launch(task, closure, count)`
(parallel.py emits the call; the symbol is left undefined in the object). That
function, and the pool behind it, are written in LLVM IR (thread_pool.ll, next to
this module, with this module's constants filled in); this module compiles it
once per process with MCJIT on the first load of an object that needs it, and
registers its address with LLVM's symbol table (`llvm.add_symbol`), so MCJIT
binds the kernels' references to it. No C compiler is involved, and the code
runs on threads that never touch Python or the GIL.

The protocol, all in one 64-bit word `slots` = launch id << 32 | CLOSED | joined:

- a launch takes the pool with a try-lock (`busy`); a launch that finds the pool
  taken (another Python thread's kernel, or a nested launch) runs the task on
  its own thread instead of waiting, so nothing can deadlock;
- on the first launch (and after a fork) the pool is set up; worker threads are
  started as launches ask for more of them, up to MAX_THREADS - 1, and are
  never stopped;
- the caller stores the task, its closure and how many workers may join, then
  opens a new launch id, wakes sleeping workers, and runs the task itself as
  participant 0: `task(closure, 0)`;
- a worker that sees a new id joins by incrementing `joined` with a
  compare-and-swap (refused once the launch is closed or full), runs
  `task(closure, index)` and counts itself in `finished`. A worker's index is
  fixed when it is started (1 + the workers started before it), not by the order
  in which it joins, and worker i joins only launches that ask for at least i
  workers, so participant p of a launch is always the same thread and gets the
  same share of every launch (parallel.py's trampoline runs participant p's own
  block of chunks first, which then stays in that core's cache, and takes what
  is left of the others' after: a worker that is late or absent delays nobody);
- when the caller's own task returns, every chunk has been taken; it closes
  the launch (sets CLOSED, which fixes how many joined) and waits, spinning then
  yielding its core, until that many have finished. A worker that was asleep or
  descheduled when the launch ran simply never joins it, so it delays nobody.
- a launch that lost time waiting for a descheduled worker makes the pool run
  the next few launches on the caller alone (BACKOFF_FLOOR_NS, MAX_BACKOFF).
- a worker that joins a launch on the CPU the caller opened it on (the caller
  stores sched_getcpu() with the launch) moves itself to another CPU of its
  affinity mask before running: the scheduler sometimes stacks the two threads
  on one CPU and, both cache-hot, leaves them there for milliseconds, every
  launch then running at one thread's speed.

An idle worker polls `slots` (a `pause` between polls on x86, the clock read
and sched_yield() called every YIELD_CHECKS clock reads) until DEFAULT_SPIN_US (RELAX_POOL_SPIN_US, set_spin)
have passed since its last task, then sleeps on a condition variable; the caller
takes the mutex to signal only when a worker it asks for sleeps (a bit per worker in
`sleeping`). A worker not asked for a launch goes to sleep at once and stays asleep
through launches that do not ask for it, so a pool grown by one wide launch neither
spins nor wakes for the narrow ones after it. The span is time, not a
count of pauses, whose length differs tenfold between CPUs; it is counted from
the worker's last task, so a model run whose kernels follow each other closer
than that finds its workers awake, and a process that stops launching has them
asleep that long after. The mutex and condition variable live in 128-byte
slots initialized with pthread_*_init, so no platform's struct layout is assumed.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.resources
import os
import string
import time

from ...diagnostics import UserError
from . import abi
from .host import host_target_machine, initialize_llvm

POOL_LAUNCH = "__relax_pool_launch"
_SET_BACKOFF = "__relax_pool_set_backoff"
_SET_SPIN = "__relax_pool_set_spin"

# Microseconds an idle worker polls for the next launch, counted from its last
# task, before it sleeps on the condition variable (RELAX_POOL_SPIN_US overrides).
# It must outlast the gaps of a model run (between kernels, and between calls of
# a model in a loop) and stay short enough not to hold a core for long once the
# process is idle. The clock is read every CLOCK_ROUNDS pauses, and at every
# YIELD_CHECKS-th read the worker calls sched_yield(), which returns at once unless
# another thread is ready to run on that core: a spinning worker then gives way
# instead of taking the core.
# 200 us is the shortest span that keeps the workers awake through a model run in a
# loop; longer spans gain nothing (figures: docs/performance-notes.md).
DEFAULT_SPIN_US = 200
CLOCK_ROUNDS = 32
# Clock reads per sched_yield() call. A yield is a system call (0.58 us on the 2-core
# Zen 4 VM, where a pause takes 26 ns): called at every clock read, it kept an idle
# worker in the kernel 40% of its spin and late to the next launch; every 8th keeps
# that near 8% and still gives the core away within microseconds
# (docs/performance-notes.md).
YIELD_CHECKS = 8
SPIN_ENV = "RELAX_POOL_SPIN_US"
MAX_SPIN_US = 1_000_000

# Polls of `finished` before the launching thread yields its core to the workers.
WAIT_SPINS = 64

# Oversubscription back-off: a launch whose caller, after its own share, waited
# longer for the workers than that share took (and more than BACKOFF_FLOOR_NS) lost
# to running alone, typically because a worker was descheduled holding a chunk. The
# pool then runs the next 1, 2, 4, ... MAX_BACKOFF launches on the caller alone and
# tries again; a launch that goes well halves the next back-off.
BACKOFF_FLOOR_NS = 20000
MAX_BACKOFF = 1024

# CPUs an affinity mask covers (glibc's cpu_set_t); a worker on a CPU past it is not moved.
AFFINITY_BITS = 1024

_CLOSED = 1 << 31
_JOINED_MASK = _CLOSED - 1


def _pause(triple: str) -> tuple[str, str]:
    """A call telling the CPU it is in a spin loop, and the intrinsic's declaration."""
    arch = triple.split("-", 1)[0]
    if arch in ("x86_64", "i386", "i686"):
        return "  call void @llvm.x86.sse2.pause()\n", "declare void @llvm.x86.sse2.pause()"
    if arch in ("aarch64", "arm64"):
        return "  call void @llvm.aarch64.hint(i32 1)\n", "declare void @llvm.aarch64.hint(i32)"
    return "", ""


def pool_ir(triple: str) -> str:
    """The pool's LLVM module, as text (thread_pool.ll with this module's constants filled in)."""
    pause, pause_declaration = _pause(triple)
    text = importlib.resources.files(__package__).joinpath("thread_pool.ll").read_text(encoding="utf-8")
    return string.Template(text).substitute(
        pause=pause, pause_declaration=pause_declaration, workers=abi.MAX_THREADS - 1,
        pool_launch=POOL_LAUNCH, set_spin=_SET_SPIN, set_backoff=_SET_BACKOFF,
        max_backoff=MAX_BACKOFF, spin_ns=DEFAULT_SPIN_US * 1000, backoff_floor_ns=BACKOFF_FLOOR_NS,
        clock_rounds=CLOCK_ROUNDS, yield_checks=YIELD_CHECKS, wait_spins=WAIT_SPINS, closed=_CLOSED, joined_mask=_JOINED_MASK,
        clock_monotonic=time.CLOCK_MONOTONIC, affinity_bits=AFFINITY_BITS, affinity_words=AFFINITY_BITS // 64,
        affinity_bytes=AFFINITY_BITS // 8)


@functools.cache
def ensure_pool() -> int:
    """Compiles the pool (once per process) and makes POOL_LAUNCH resolvable; returns its address."""
    import llvmlite.binding as llvm  # the loader's JIT: the code generator imports this module for its names

    initialize_llvm()
    machine = host_target_machine()
    module = llvm.parse_assembly(pool_ir(machine.triple))
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    address = engine.get_function_address(POOL_LAUNCH)
    if not address:
        raise RuntimeError("the kernel thread pool did not compile")
    llvm.add_symbol(POOL_LAUNCH, address)
    global _set_backoff, _set_spin
    _set_backoff = ctypes.CFUNCTYPE(None, ctypes.c_int32)(engine.get_function_address(_SET_BACKOFF))
    _set_spin = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int32)(engine.get_function_address(_SET_SPIN))
    _set_spin(spin_from_environment() * 1000, YIELD_CHECKS)
    # Worker threads run this code until the process ends: it must never be freed,
    # not even when Python tears its objects down at exit.
    engine.detach()
    return address


_set_backoff = None
_set_spin = None


def spin_from_environment() -> int:
    """Microseconds idle workers spin: RELAX_POOL_SPIN_US, else DEFAULT_SPIN_US."""
    value = os.environ.get(SPIN_ENV, "").strip()
    if not value:
        return DEFAULT_SPIN_US
    try:
        microseconds = int(value)
    except ValueError:
        microseconds = -1
    if not 0 <= microseconds <= MAX_SPIN_US:
        raise UserError(f"{SPIN_ENV} must be a whole number of microseconds from 0 to {MAX_SPIN_US}, not '{value}'")
    return microseconds


def set_spin(microseconds: int, yield_every: int = YIELD_CHECKS) -> None:
    """How long idle pool workers poll for the next launch before they sleep.

    They call sched_yield() at every `yield_every`-th clock read (never for 0), so a
    spinning worker gives its core to any other runnable thread. Workers already
    spinning keep their span until they next run a task.
    """
    ensure_pool()
    _set_spin(max(0, min(int(microseconds), MAX_SPIN_US)) * 1000, max(0, min(int(yield_every), 1 << 20)))


def set_max_backoff(launches: int = MAX_BACKOFF) -> None:
    """How many launches the pool may run alone after one that lost time waiting (0: never).

    Tests that check which threads ran a loop turn the back-off off, so that a
    loaded machine cannot make them see one thread.
    """
    ensure_pool()
    _set_backoff(max(0, min(int(launches), 1 << 30)))
