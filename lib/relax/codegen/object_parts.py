"""Kernels compiled to native code in parts, on worker threads, while Python generates the next.

In one LLVM module, a model's kernels would be optimized and compiled on one core,
and only after Python had lowered and generated every one. Here the kernels are
cut, in the order they are generated, into parts of at least PART_BYTES of LLVM IR
text; each part is handed, as soon as it is complete, to a worker thread that parses
it into an LLVM context of its own, keeps its unoptimized bitcode, runs the O3
pipeline and emits its native object (LLVM called directly, relax/llvm_capi.py, so
that the workers' calls never take turns on a lock). The generating thread goes on
lowering the next kernels meanwhile, and the parts compile on every core.

The cut depends only on the kernels' IR, never on timing or on the number of
cores, so a build gives the same parts, and the same bytes, everywhere. Each part
is a complete object: it defines the entries of its kernels and refers to nothing
in another part (a kernel and the kernels that forward to its body are in one
group, kernel_dedup.py). A model whose IR is under PART_BYTES is one part, in a
.ko of the 0.1 layout (one object, one bitcode); several parts are format 0.3
(docs/file-format-ko.md).

Each part costs an ELF header, its own copies of the helpers and about a millisecond
of LLVM's set-up, so parts are large enough to amortize that, and the kernels run as
fast from parts as from one object. They are small enough that a large kernel is a
part of its own: LLVM starts on the first one while Python generates the second, and
the last parts are small, so that the workers end together.
One core is held for the generating thread (PartCompiler's gate) until it waits, so
generation, which feeds the workers, is not slowed by them. Figures:
docs/performance-notes.md.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

from ..records import record
from ..llvm_capi import Context, Module, TargetMachine, optimize
from ..runtime.kernels.llvm_compile import slp_is_safe
from .fresh_stack import thread_stack_size
from ..target.llvm_target import TargetSpec, target_machine
from .parallel import link_launcher
from .worker_pool import PendingCall, WorkerPool
from ..runtime.kernels.libmvec import to_libmvec
from ..target.vector_width import vector_extensions

# LLVM IR text a part holds at least (the last part excepted): see the module docstring.
PART_BYTES = 12 << 10

# Worker threads at most; fewer on a machine with fewer cores.
MAX_WORKERS = 4

# The interpreter's switch interval (seconds) while the caller generates kernels: see
# PartCompiler.generating.
GENERATING_SWITCH_INTERVAL = 0.0005


@record
class CompiledPart:
    """One part of a target's kernels: its native object and its unoptimized bitcode."""

    native_object: bytes
    bitcode: bytes


def cut_parts(texts, part_bytes: int | None = None):
    """Yields lists of consecutive `texts` (LLVM IR of kernel groups), each at least
    `part_bytes` (default PART_BYTES) long in all but the last."""
    part_bytes = PART_BYTES if part_bytes is None else part_bytes
    part, size = [], 0
    for text in texts:
        part.append(text)
        size += len(text)
        if size >= part_bytes:
            yield part
            part, size = [], 0
    if part:
        yield part


def worker_count() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


class PartCompiler:
    """A pool of worker threads that compile parts; `submit` returns a pending CompiledPart
    (worker_pool.PendingCall: `result()` waits for it).

    While the caller's thread still has Python to run (it generates the next kernels),
    one core is left to it: at most workers - 1 parts compile at once, until
    `all_cores()` (the caller is about to wait) lets every worker run."""

    def __init__(self, workers: int | None = None):
        workers = workers or worker_count()
        # The pool starts its threads as parts arrive, each with the stack of fresh_stack.py.
        self._pool = WorkerPool(workers, "relax-llvm", thread_stack_size)
        self._machines = threading.local()
        self._gate = threading.Semaphore(max(1, workers - 1))
        self._held = workers > 1  # one permit held back for the caller's thread

    def all_cores(self) -> None:
        """Lets every worker compile (the caller's thread is done with Python)."""
        if self._held:
            self._held = False
            self._gate.release()

    @staticmethod
    @contextlib.contextmanager
    def generating():
        """While the caller's thread runs Python (generating kernels), a worker returning
        from each of its LLVM calls waits for the GIL, by default up to 5 ms a time, and a
        part makes dozens of such calls: on 2 cores the transformer's first parts took
        twice their time. A short switch interval lets the worker back in promptly."""
        previous = sys.getswitchinterval()
        sys.setswitchinterval(min(previous, GENERATING_SWITCH_INTERVAL))
        try:
            yield
        finally:
            sys.setswitchinterval(previous)

    def submit(self, texts: list[str], spec: TargetSpec) -> PendingCall:
        return self._pool.submit(self._compile, tuple(texts), spec)

    def close(self) -> None:
        """Drops the parts not started and waits for the running ones."""
        self._pool.close()

    def __enter__(self) -> "PartCompiler":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _machine(self, spec: TargetSpec) -> TargetMachine:
        """This thread's target machine for `spec` (a machine is used by one thread at a time)."""
        machines = self._machines.__dict__.setdefault("by_spec", {})
        if spec not in machines:
            machines[spec] = target_machine(spec)
        return machines[spec]

    def _compile(self, texts: tuple[str, ...], spec: TargetSpec) -> CompiledPart:
        with self._gate:
            return compile_part(texts, spec, self._machine(spec))


def compile_part(texts, spec: TargetSpec, machine: TargetMachine) -> CompiledPart:
    """Parses `texts` into one module of a fresh context, then bitcode, O3 and the native object."""
    with Context() as context:
        try:
            module = Module.parse(texts[0], context)
            for text in texts[1:]:
                module.link_in(Module.parse(text, context))
            link_launcher(module, context, machine)
            module.verify()
        except RuntimeError as exc:
            raise RuntimeError(f"codegen produced invalid LLVM IR: {exc}") from None
        bitcode = module.bitcode()
        optimize(module, machine, spec.opt_level, all(slp_is_safe(text) for text in texts))
        to_libmvec(module, spec.triple, vector_extensions(spec))
        return CompiledPart(machine.emit(module), bitcode)
