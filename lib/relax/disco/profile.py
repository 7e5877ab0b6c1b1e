"""relaxrun --workers/--mpi --profile: one run timed on every worker, with its collectives.

`relaxrun.disco.timed_call(function, *args)`, registered here, runs on each worker: it
binds the worker's context again with the communicator wrapped in TimedCommunicator,
calls the program's function, puts the context back, and returns a JSON text of the
worker's seconds and the seconds and calls of each collective. A collective's time
includes the wait for the slowest peer, which is what a load imbalance costs.

ProcessSession's worker processes run this file as a plugin (the way a user's
functions get registered there), so it imports by absolute names; worker threads and
MPI ranks import it. `measure`, `profile_text` and `profile_json` are the controller's.
"""

from __future__ import annotations

import dataclasses
import json
import time

from relax.disco import worker_context
from relax.runtime.registry import register_func

TIMED_CALL = "relaxrun.disco.timed_call"
COLLECTIVES = ("allreduce", "allgather", "broadcast_from_worker0", "scatter_from_worker0", "barrier")


class TimedCommunicator:
    """A Communicator that forwards every call to `inner` and adds up the seconds of each."""

    def __init__(self, inner):
        self.inner = inner
        self.worker_id = inner.worker_id
        self.num_workers = inner.num_workers
        self.totals: dict[str, list] = {}  # collective -> [calls, seconds]

    def __getattr__(self, name):
        method = getattr(self.inner, name)
        if name not in COLLECTIVES:
            return method

        def timed(*args):
            start = time.perf_counter()
            try:
                return method(*args)
            finally:
                entry = self.totals.setdefault(name, [0, 0.0])
                entry[0] += 1
                entry[1] += time.perf_counter() - start

        return timed


def timed_call(function, *args) -> str:
    """Runs `function(*args)` on this worker; JSON {"seconds", "collectives": {name: [calls, seconds]}}."""
    context = worker_context.current()
    timed = None
    if context is not None and context.ccl is not None:
        timed = TimedCommunicator(context.ccl)
        worker_context.bind(dataclasses.replace(context, ccl=timed))
    start = time.perf_counter()
    try:
        function(*args)
        seconds = time.perf_counter() - start
    finally:
        if timed is not None:
            worker_context.bind(context)
    return json.dumps({"seconds": seconds, "collectives": timed.totals if timed is not None else {}})


register_func(TIMED_CALL, timed_call, override=True)


# ---- the controller's side -------------------------------------------------------------------

def measure(session, function, args) -> list[dict]:
    """One more run of `function` on every worker, timed there; one record per worker, in rank order."""
    result = session.get_global_func(TIMED_CALL)(function, *args)
    return [json.loads(result.debug_get_from_remote(rank)) for rank in range(session.num_workers)]


def _collective_seconds(record: dict) -> float:
    return sum(seconds for _, seconds in record["collectives"].values())


def profile_text(func: str, session, workers: list[dict]) -> str:
    """The table relaxrun prints on stderr: per worker, then per collective and worker."""
    lines = [f"Disco profile of {func}: {session.num_workers} workers, ccl {session.ccl} (one extra run)",
             f"{'worker':>6}  {'total us':>12}  {'collectives us':>14}  {'share':>6}  {'calls':>5}"]
    for rank, record in enumerate(workers):
        total, inside = record["seconds"], _collective_seconds(record)
        calls = sum(calls for calls, _ in record["collectives"].values())
        share = 100.0 * inside / total if total else 0.0
        lines.append(f"{rank:>6}  {total * 1e6:>12.1f}  {inside * 1e6:>14.1f}  {share:>5.1f}%  {calls:>5}")
    names = sorted({name for record in workers for name in record["collectives"]})
    if names:
        header = "".join(f"  {'worker ' + str(rank) + ' us':>12}" for rank in range(len(workers)))
        lines.append(f"{'collective':<22}  {'calls':>5}{header}")
        for name in names:
            calls = max(record["collectives"].get(name, [0, 0.0])[0] for record in workers)
            cells = "".join(f"  {record['collectives'].get(name, [0, 0.0])[1] * 1e6:>12.1f}" for record in workers)
            lines.append(f"{name:<22}  {calls:>5}{cells}")
    return "".join(line + "\n" for line in lines)


def profile_json(workers: list[dict]) -> list[dict]:
    """--json's "profile" with workers: one entry per worker."""
    return [{"worker": rank, "total_us": record["seconds"] * 1e6,
             "collective_us": _collective_seconds(record) * 1e6,
             "collectives": {name: {"calls": calls, "total_us": seconds * 1e6}
                             for name, (calls, seconds) in sorted(record["collectives"].items())}}
            for rank, record in enumerate(workers)]
