"""Kernels compiled to native code in parts, on worker threads, while Python generates the next.

A model's kernels used to be one LLVM module: Python lowered and generated every
kernel, then LLVM optimized and compiled the whole on one core (the transformer:
about 0.2 s of Python, then 0.45 s of LLVM). Here the kernels are cut, in the order
they are generated, into parts of at least PART_BYTES of LLVM IR text; each part
is handed, as soon as it is complete, to a worker thread that parses it into an
LLVM context of its own, keeps its unoptimized bitcode, runs the O3 pipeline and
emits its native object (the long calls outside llvmlite's lock:
llvm_unlocked.py). The generating thread goes on lowering the next kernels
meanwhile, and the parts compile on every core.

The cut depends only on the kernels' IR, never on timing or on the number of
cores, so a build gives the same parts, and the same bytes, everywhere. Each part
is a complete object: it defines the entries of its kernels and refers to nothing
in another part (a kernel and the kernels that forward to its body are in one
group, kernel_dedup.py). A model whose IR is under PART_BYTES is one part, in a
.ko of the 0.1 layout (one object, one bitcode); several parts are format 0.3
(docs/file-format-ko.md).

Measured on the 2-core machine, idle, the transformer's kernels for a generic
x86-64 CPU (bind-params and the -O2 pipeline done, generation to .ko bytes, 3 runs
each): one part on one thread 0.59-0.68 s; 32 KiB parts on 2 workers 0.38-0.47 s
(the .ko grows from 114 to 126 KB: an ELF header and the helpers per part). Parts
of 16 KiB and 64 KiB measured within the noise of 32 KiB, in that harness and in
whole relaxc runs; 3 workers on 2 cores no better than 2. For this host's CPU
(AVX-512) the bench models come in 2 (mlp_b1), 3 (mlp_b64, cnn) and 7
(transformer, 15 kernels) parts. The kernels run as fast from parts as from one
object (bench/peers.py mlp_b64, 6 alternated runs: median 186 us in parts, 194 us
in one).
Holding one core for the generating thread (PartCompiler's gate) until it waits:
generation 0.17-0.25 s and total 0.38-0.46 s, against 0.20-0.53 s and 0.40-0.68 s
with both workers free from the start (4 alternated rounds on a machine with
other load).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import llvmlite.binding as llvm

from ..runtime.kernels.llvm_compile import slp_is_safe
from . import llvm_unlocked
from .fresh_stack import thread_stack_size
from .llvm_target import TargetSpec, target_machine
from .parallel import LAUNCHER, link_launcher
from .vector_math import map_to_libmvec, uses_libmvec, vector_intrinsics
from .vector_width import vector_extensions

# LLVM IR text a part holds at least (the last part excepted): see the module docstring.
# The transformer's kernel groups are 2-69 KiB of IR each for an AVX-512 host.
PART_BYTES = 1 << 15

# Worker threads at most; fewer on a machine with fewer cores.
MAX_WORKERS = 4


@dataclass(frozen=True)
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
    """A pool of worker threads that compile parts; `submit` returns a Future of a CompiledPart.

    While the caller's thread still has Python to run (it generates the next kernels),
    one core is left to it: at most workers - 1 parts compile at once, until
    `all_cores()` (the caller is about to wait) lets every worker run."""

    def __init__(self, workers: int | None = None):
        workers = workers or worker_count()
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="relax-llvm")
        self._machines = threading.local()
        self._gate = threading.Semaphore(max(1, workers - 1))
        self._held = workers > 1  # one permit held back for the caller's thread

    def all_cores(self) -> None:
        """Lets every worker compile (the caller's thread is done with Python)."""
        if self._held:
            self._held = False
            self._gate.release()

    def submit(self, texts: list[str], spec: TargetSpec) -> Future:
        with thread_stack_size():  # the pool starts its threads as parts arrive
            return self._executor.submit(self._compile, tuple(texts), spec)

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "PartCompiler":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _machine(self, spec: TargetSpec) -> "llvm.TargetMachine":
        """This thread's target machine for `spec` (a machine is used by one thread at a time)."""
        machines = self._machines.__dict__.setdefault("by_spec", {})
        if spec not in machines:
            machines[spec] = target_machine(spec)
        return machines[spec]

    def _compile(self, texts: tuple[str, ...], spec: TargetSpec) -> CompiledPart:
        with self._gate:
            return compile_part(texts, spec, self._machine(spec))


def compile_part(texts, spec: TargetSpec, machine: "llvm.TargetMachine") -> CompiledPart:
    """Parses `texts` into one module of a fresh context, then bitcode, O3 and the native object."""
    context = llvm.create_context()
    try:
        module = llvm.parse_assembly(texts[0], context=context)
        for text in texts[1:]:
            module.link_in(llvm.parse_assembly(text, context=context))
        if LAUNCHER in {function.name for function in module.functions}:
            link_launcher(module, context)
        module.verify()
    except RuntimeError as exc:
        raise RuntimeError(f"codegen produced invalid LLVM IR: {exc}") from None
    bitcode = module.as_bitcode()
    llvm_unlocked.optimize(module, machine, spec.opt_level, all(slp_is_safe(text) for text in texts))
    if uses_libmvec(spec.triple) and vector_intrinsics(module):
        module = llvm.parse_assembly(map_to_libmvec(str(module), vector_extensions(spec)), context=context)
        module.verify()
    return CompiledPart(llvm_unlocked.emit_object(machine, module), bitcode)
