"""The controller's view of a Disco session: DRef, DModule, DPackedFunc and the Session API.

A DRef names one object per worker (each worker holds its own value under the same id).
Calling a DPackedFunc or a DModule function runs the same call on every worker, each on
its own values, and gives a new DRef. Every call waits for the workers' answers, so a
worker's error surfaces at the call that caused it, as "worker K: message".

A session kind only says how a Command reaches the workers and how their answers come
back (`_execute`); this class turns the API into Commands.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..diagnostics import UserError
from .ccl import check_reduce_op
from .executor import Command, Ref


class DRef:
    """An object on every worker of `session` (a tensor, a module, a function, a result)."""

    def __init__(self, session: Session, ref_id: int):
        self.session = session
        self.id = ref_id

    def debug_get_from_remote(self, worker: int = 0):
        """Worker `worker`'s value, copied to the controller (numpy for a tensor)."""
        return self.session._get(self, worker)

    def __del__(self):
        session = getattr(self, "session", None)
        if session is not None:
            session._freed.append(self.id)  # sent with the next command: never talk to workers from here

    def __repr__(self) -> str:
        return f"DRef({self.id})"


class DPackedFunc(DRef):
    """A function on every worker; calling it calls it on all of them."""

    def __call__(self, *args) -> DRef:
        return self.session._call(self, args)


class DModule(DRef):
    """A VirtualMachine on every worker; `dmod["main"]` is its function as a DPackedFunc."""

    def __getitem__(self, name: str) -> DPackedFunc:
        return self.session._function(self, name)


class Session(ABC):
    """The API every session kind shares. `num_workers` workers, ids 0..num_workers-1."""

    num_workers: int
    default_ccl: str = ""

    def __init__(self, num_workers: int):
        if num_workers < 1:
            raise UserError(f"a Disco session needs at least one worker, not {num_workers}")
        self.num_workers = num_workers
        self._next_id = 1
        self._freed: list[int] = []
        self._closed = False
        self.ccl = ""

    # ---- what a session kind provides ------------------------------------------------------

    @abstractmethod
    def _execute(self, command: Command):
        """Runs `command` on every worker; the value of worker `command.reply_from`, or a UserError."""

    @abstractmethod
    def _close(self) -> None:
        """Ends the workers and the channels to them."""

    def _ccl_setup(self, backend: str):
        """What every worker needs to make its communicator for `backend` (plain data)."""
        if backend == "nccl":
            return self._run("nccl_unique_id", reply_from=0)
        return None

    # ---- the API ---------------------------------------------------------------------------

    def init_ccl(self, backend: str | None = None) -> None:
        """Makes the workers' communicator: "threads" (ThreadedSession, CPU), "mpi" (processes), "nccl" (GPUs)."""
        backend = backend or self.default_ccl
        self._run("init_ccl", backend, self._ccl_setup(backend))
        self.ccl = backend

    def load_vm_module(self, path: str, device: str | None = None) -> DModule:
        """Loads the artifact `path` (.vmx or .vmo) into a VirtualMachine on every worker.

        `device`: "cpu" or "cuda" (worker i uses cuda:i); by default the communicator's device."""
        module = self._new(DModule)
        self._run("load_vm_module", module.id, str(path), device)
        return module

    def get_global_func(self, name: str) -> DPackedFunc:
        """The function `name` of the workers' PackedFunc registry (relax.runtime.register_func)."""
        return self._function(None, name)

    def empty(self, shape, dtype: str = "float32") -> DRef:
        ref = self._new(DRef)
        self._run("empty", ref.id, [int(d) for d in shape], str(dtype))
        return ref

    def broadcast(self, array) -> DRef:
        """A copy of `array` on every worker."""
        array = np.asarray(array)
        return self._put([array] * self.num_workers)

    def scatter(self, array, axis: int = 0) -> DRef:
        """Worker i gets chunk i of `array` split evenly along `axis`."""
        array = np.asarray(array)
        if array.ndim == 0 or not -array.ndim <= axis < array.ndim:
            raise UserError(f"scatter: axis {axis} is out of range for an array of shape {array.shape}")
        if array.shape[axis] % self.num_workers:
            raise UserError(f"scatter: dimension {axis} of shape {array.shape} does not split into "
                            f"{self.num_workers} equal chunks")
        return self._put([np.ascontiguousarray(chunk) for chunk in np.split(array, self.num_workers, axis)])

    def allreduce(self, dref: DRef, op: str = "sum") -> DRef:
        """A new DRef: the elementwise `op` (sum, prod, min, max, avg) over the workers' values."""
        check_reduce_op(op)
        result = self._new(DRef)
        self._run("allreduce", result.id, self._ref(dref), op)
        return result

    def allgather(self, dref: DRef) -> DRef:
        """A new DRef: the workers' values concatenated along axis 0, in rank order, on every worker."""
        result = self._new(DRef)
        self._run("allgather", result.id, self._ref(dref))
        return result

    def sync_worker_0(self) -> None:
        """Returns once worker 0 has run every command sent so far."""
        self._run("sync", reply_from=0)

    def shutdown(self) -> None:
        """Ends the workers (idempotent)."""
        if not self._closed:
            self._closed = True
            self._close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.shutdown()

    # ---- helpers ---------------------------------------------------------------------------

    def _new(self, kind):
        ref = kind(self, self._next_id)
        self._next_id += 1
        return ref

    def _ref(self, dref) -> Ref:
        if not isinstance(dref, DRef) or dref.session is not self:
            raise UserError(f"expected a DRef of this session, got {type(dref).__name__}")
        return Ref(dref.id)

    def _argument(self, value):
        if isinstance(value, DRef):
            return self._ref(value)
        if isinstance(value, (np.ndarray, np.generic, int, float, str, bool)) or value is None:
            return value  # a constant: every worker gets the same
        raise UserError(f"a DPackedFunc takes DRefs and constants, not {type(value).__name__}")

    def _run(self, kind: str, *args, reply_from: int | None = None, per_worker=None):
        if self._closed:
            raise UserError("the Disco session is shut down")
        freed, self._freed = tuple(self._freed), []
        return self._execute(Command(kind, args, freed, reply_from, per_worker))

    def _put(self, values: list) -> DRef:
        ref = self._new(DRef)
        self._run("put", ref.id, per_worker=tuple(values))
        return ref

    def _get(self, dref: DRef, worker: int):
        if not 0 <= worker < self.num_workers:
            raise UserError(f"worker {worker} does not exist (the session has {self.num_workers})")
        return self._run("get", self._ref(dref), reply_from=worker)

    def _function(self, module: DModule | None, name: str) -> DPackedFunc:
        function = self._new(DPackedFunc)
        self._run("get_function", function.id, None if module is None else self._ref(module), str(name))
        return function

    def _call(self, function: DPackedFunc, args) -> DRef:
        result = self._new(DRef)
        self._run("call", result.id, self._ref(function), *[self._argument(arg) for arg in args])
        return result


def first_error(answers: dict) -> str | None:
    """"worker K: message" for the lowest rank that failed on its own (not in an abandoned collective)."""
    errors = [(rank, answer) for rank, answer in sorted(answers.items()) if answer[0] == "error"]
    if not errors:
        return None
    primary = [(rank, answer) for rank, answer in errors if not answer[2]] or errors
    rank, answer = primary[0]
    return f"worker {rank}: {answer[1]}"
