"""The worker a thread runs as: its rank, the number of workers and their communicator.

A Disco worker loop binds its context to the thread that runs the worker's VM; the
`runtime.disco.*` builtins read it back with `current()`. Outside a session no context
is bound and a program runs as the only worker, so collectives are identities.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..records import record

if TYPE_CHECKING:
    from .ccl import Communicator

_LOCAL = threading.local()


@record
class WorkerContext:
    worker_id: int
    num_workers: int
    ccl: Communicator | None  # None until the session's init_ccl
    device: str = "cpu"


def current() -> WorkerContext | None:
    """The context bound to this thread, or None when the program runs alone."""
    return getattr(_LOCAL, "context", None)


def bind(context: WorkerContext | None) -> None:
    """Makes `context` the current worker of this thread (None unbinds)."""
    _LOCAL.context = context
