"""One worker's side of every session command: its object table and what each command does to it.

Every session kind (threads, processes, MPI ranks) runs the same Executor; only the way
commands reach it differs. A command is plain data: a kind, arguments in which `Ref(id)`
names an object of the table (a DRef's value on this worker), and the ids the controller
has freed since the last command. `handle` returns ("ok", value) or ("error", message,
aborted), never raises, so the channel always gets an answer.

The executor binds its WorkerContext on the thread that runs it, so the
`runtime.disco.*` builtins inside compiled programs find this worker and its communicator.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from ..diagnostics import UserError
from ..records import record
from . import worker_context
from .ccl import CollectiveAborted
from .worker_context import WorkerContext


@record
class Ref:
    """The object `id` of the worker's table, as an argument of a command."""

    id: int


@record
class Command:
    kind: str
    args: tuple = ()
    free: tuple = ()  # ids the controller released
    reply_from: int | None = None  # the worker whose value the controller wants (others answer None)
    per_worker: tuple | None = None  # worker i gets per_worker[i] appended to `args`


@record(mutable=True)
class Executor:
    worker_id: int
    num_workers: int
    objects: dict = field(default_factory=dict)
    context: WorkerContext | None = None
    ccl_factory: object = None  # (backend, setup, executor) -> Communicator; set by the session kind

    def __post_init__(self):
        self.context = WorkerContext(self.worker_id, self.num_workers, None, "cpu")

    def bind(self) -> None:
        worker_context.bind(self.context)

    def handle(self, command: Command) -> tuple:
        try:
            for freed in command.free:
                self.objects.pop(freed, None)
            args = command.args
            if command.per_worker is not None:
                args = (*args, command.per_worker[self.worker_id])
            value = getattr(self, "do_" + command.kind)(*[self._resolve(arg) for arg in args])
            if command.reply_from is not None and command.reply_from != self.worker_id:
                value = None
            return ("ok", value)
        except CollectiveAborted as error:
            return ("error", str(error), True)
        except Exception as error:  # noqa: BLE001 - every failure goes back to the controller with this rank
            message = str(error) if isinstance(error, UserError) else f"{type(error).__name__}: {error}"
            return ("error", message, _caused_by_abort(error))

    def _resolve(self, arg):
        if isinstance(arg, Ref):
            if arg.id not in self.objects:
                raise UserError(f"object {arg.id} does not exist on worker {self.worker_id} (freed, or never made)")
            return self.objects[arg.id]
        if isinstance(arg, (tuple, list)) and any(isinstance(item, Ref) for item in arg):
            return type(arg)(self._resolve(item) for item in arg)
        return arg

    def _on_device(self, array):
        if self.context.device == "cuda":
            import cupy

            return cupy.asarray(array)
        return np.array(array, copy=True)  # a worker owns its copy: threads would share the controller's

    # ---- commands (do_<kind>) --------------------------------------------------------------

    def do_load_vm_module(self, dst: int, path: str, device: str | None) -> None:
        from ..vm import VirtualMachine, load

        device = device or self.context.device
        if device == "cuda":
            device = f"cuda:{self.worker_id}"  # one GPU per worker
        self.objects[dst] = VirtualMachine(load(path), device)

    def do_get_function(self, dst: int, module, name: str) -> None:
        if module is None:
            from ..runtime.registry import get_global_func

            self.objects[dst] = get_global_func(name)
        else:
            self.objects[dst] = module[name]

    def do_call(self, dst: int, function, *args) -> None:
        self.objects[dst] = function(*args)

    def do_empty(self, dst: int, shape, dtype: str) -> None:
        if self.context.device == "cuda":
            import cupy

            self.objects[dst] = cupy.empty(tuple(shape), dtype=dtype)
        else:
            self.objects[dst] = np.empty(tuple(shape), dtype=dtype)

    def do_put(self, dst: int, value) -> None:
        self.objects[dst] = self._on_device(value)

    def do_get(self, value):
        if type(value).__module__.split(".")[0] == "cupy":  # a GPU array: its host copy
            return value.get()
        return value

    def do_allreduce(self, dst: int, send, op: str) -> None:
        recv = _empty_like(send)
        self._communicator().allreduce(send, recv, op)
        self.objects[dst] = recv

    def do_allgather(self, dst: int, send) -> None:
        shape = (send.shape[0] * self.num_workers, *send.shape[1:]) if send.ndim else (self.num_workers,)
        recv = _empty_like(send, shape)
        self._communicator().allgather(send if send.ndim else send.reshape(1), recv)
        self.objects[dst] = recv

    def do_init_ccl(self, backend: str, setup) -> None:
        if self.ccl_factory is None:
            raise UserError("this session has no communicators")
        ccl, device = self.ccl_factory(backend, setup, self)
        self.context = WorkerContext(self.worker_id, self.num_workers, ccl, device)
        self.bind()

    def do_nccl_unique_id(self):
        from .ccl_nccl import make_unique_id, unique_id_to_array

        if self.worker_id != 0:
            return None  # worker 0 makes the id; the session hands it to everyone
        return unique_id_to_array(make_unique_id())

    def do_sync(self) -> None:
        """Nothing: the answer itself tells the controller the worker has run every earlier command."""

    def do_shutdown(self) -> None:
        self.objects.clear()
        worker_context.bind(None)

    def _communicator(self):
        if self.context.ccl is None:
            raise UserError("no communicator: call sess.init_ccl(...) first")
        return self.context.ccl


def _caused_by_abort(error: BaseException) -> bool:
    """Whether `error` came from an abandoned collective: the VM wraps what a runtime.disco
    builtin raises in a VMError, so the CollectiveAborted is found down the chain."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, CollectiveAborted):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _empty_like(array, shape=None):
    if isinstance(array, np.ndarray):
        return np.empty(array.shape if shape is None else shape, dtype=array.dtype)
    import cupy

    return cupy.empty(array.shape if shape is None else shape, dtype=array.dtype)
