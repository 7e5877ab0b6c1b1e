"""relaxrun --workers N / --mpi: relaxrun's run (run.py) with the artifact on a Disco session.

    check the options -> load the artifact here, pick the function, bind and check the
    inputs (before any worker starts) -> start the session -> every worker loads the
    artifact -> every input is broadcast to every worker (the program scatters what it
    shards, R.ccl.scatter_from_worker0) -> warm-up and timed runs -> worker 0's results,
    printed, written and compared exactly as a single run does

The session, by --ccl: "mpi" (default) a ProcessSession, worker processes under
mpiexec; "threads" a ThreadedSession, worker threads of this process; "nccl" a
ProcessSession with one GPU per worker. --mpi runs as the ranks of the user's own
`mpiexec -n N relaxrun --mpi ...` (MPISession): rank 0 is the controller and worker 0 and
prints everything, the other ranks only serve commands. A worker's failure ends the
session with "relaxrun: error: worker K: message" (exit 1). --profile adds one run that
times each worker and the collectives inside it (relax/disco/profile.py). Times (--repeat,
--print-time) are measured by the controller: a call returns when every worker has
finished it.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from ..diagnostics import UserError
from ..records import record
from .run import TOOL, RunOptions, _function_info, _print_json, _print_results, _say_what, list_functions_text
from .run import load_artifact
from .run_check import bind_inputs, parameters
from .run_compare import compare
from .run_inputs import parse_values
from .run_outputs import flatten
from .runner import EXIT_MISMATCH, EXIT_USAGE, ToolExit

ERROR_GRACE = 1.0  # seconds the other workers get to report their own errors after a worker's
DEFAULT_VM = "every worker's VM runs with the default settings"
# Options that name another machine, act on one local VM, or set what a worker's VM does not take.
REFUSED = {"remote": ("--remote", "the workers run on this host; mpiexec -hosts ... relaxrun --mpi spans machines"),
           "trace": ("--trace", "it traces one VM"), "allow_python": ("--allow-python", DEFAULT_VM),
           "exec_mode": ("--exec-mode", DEFAULT_VM)}


@record
class Plan:
    """What runs: the function, its signature record, the bound inputs and the expected outputs."""

    func: str
    record: dict | None
    args: list
    expected: list


def refuse(message: str):
    """A usage error in CLI.md's form: `relaxrun: error: message`, exit 2."""
    sys.stderr.write(f"{TOOL}: error: {message}\n")
    raise ToolExit(EXIT_USAGE)


def refuse_with_serving(**serving) -> None:
    """--workers/--mpi/--ccl name a local run; refused next to --serve and the tracker options."""
    for name, value in serving.items():
        if value is not None:
            refuse(f"--workers, --mpi and --ccl run an artifact here; they do not combine with "
                   f"--{name.replace('_', '-')}")


def check_worker_options(options: RunOptions) -> None:
    for field, (option, reason) in REFUSED.items():
        if getattr(options, field):
            refuse(f"{option} cannot be used with {'--mpi' if options.mpi else '--workers'} ({reason})")
    if options.memory != "pooled":
        refuse(f"--memory {options.memory} cannot be used with --workers or --mpi ({DEFAULT_VM})")
    if options.mpi and options.workers is not None:
        refuse("--mpi takes the number of workers from mpiexec -n; drop --workers")
    if options.workers is None and not options.mpi:
        refuse("--ccl needs --workers N or --mpi")
    if options.mpi and options.ccl == "threads":
        refuse("--mpi runs one worker per rank: --ccl threads needs --workers N instead")
    if options.artifact == "-":
        refuse("with --workers or --mpi the artifact must be a file: every worker loads it by path")
    _check_device(options)


def _check_device(options: RunOptions) -> None:
    """Every worker's VM runs on its communicator's device (cpu, or cuda:i for nccl): --device may only agree."""
    if options.ccl == "nccl":
        if options.device not in ("cpu", "cuda"):
            refuse(f"--device {options.device}: with --ccl nccl worker i runs on cuda:i; use --device cuda")
    elif options.device != "cpu":
        refuse(f"--device {options.device} with workers needs --ccl nccl (mpi and threads move CPU tensors)")


# ---- running -------------------------------------------------------------------------------

def run_workers(options: RunOptions) -> int:
    check_worker_options(options)
    from ..vm.machine.py_functions import run_plugin

    for plugin in options.plugins:  # threads and MPI ranks run them here; worker processes run them too
        run_plugin(plugin)
    if options.profile:
        from ..disco import profile  # noqa: F401 - registers the timed call in this process
    if options.mpi:
        return _run_mpi(options)
    plan = _prepare(options)
    if plan is None:
        return 0
    with _open_session(options) as session:
        return _run_on(session, plan, options)


def _run_mpi(options: RunOptions) -> int:
    """Every rank of the user's mpiexec job: rank 0 runs, the others serve until it is done."""
    try:
        from ..disco import mpi_main, mpi_session
    except ImportError as error:
        raise UserError(f"--mpi needs mpi4py (pip install mpi4py mpich): {error}") from None
    mpi_session.ERROR_PREFIX = f"{TOOL}: error: "

    def program(session):
        plan = _prepare(options)
        return 0 if plan is None else _run_on(session, plan, options)

    result = mpi_main(program, options.ccl)
    return 0 if result is None else result


def _prepare(options: RunOptions) -> Plan | None:
    """The function and its checked inputs, before any worker runs; None after --list-functions."""
    from ..vm.bytecode.signature import function_signatures

    exe = load_artifact(options.artifact, options.trust)
    if options.list_functions:
        sys.stdout.write(list_functions_text(exe))
        return None
    func = options.func or "main"
    info = _function_info(exe, func, options.artifact)
    record = function_signatures(exe).get(func)
    params = parameters(record, info.param_names, info.num_args)
    args = bind_inputs(func, params, parse_values(options.inputs))
    for (name, _), value in zip(params, args):
        if not isinstance(value, (np.ndarray, bool, int, float)):
            raise UserError(f"parameter '{name}' of '{func}' is a {type(value).__name__}: with workers the inputs "
                            "are tensors and scalars (each tensor is broadcast to every worker)")
    if options.verbose:
        _say_what(options, func, record, params, args)
    return Plan(func, record, args, parse_values(options.expected, "--expected-output"))


def _open_session(options: RunOptions):
    from .. import disco

    ccl = options.ccl or "mpi"
    if options.verbose:
        kind = "ThreadedSession" if ccl == "threads" else "ProcessSession"
        sys.stderr.write(f"{TOOL}: {options.workers} workers, {kind}, ccl {ccl}\n")
    if ccl == "threads":
        return disco.ThreadedSession(options.workers, ccl)
    plugins = [os.path.abspath(plugin) for plugin in options.plugins]
    if options.profile:
        from ..disco import profile

        plugins.append(profile.__file__)  # registers the timed call in each worker process
    # A worker blocked in a collective with a failed one never answers: wait ERROR_GRACE, not 3 s.
    return disco.ProcessSession(options.workers, ccl, error_grace=ERROR_GRACE, plugins=tuple(plugins))


def _run_on(session, plan: Plan, options: RunOptions) -> int:
    """Loads, broadcasts, runs and reports on an open session; worker 0's results."""
    module = session.load_vm_module(os.path.abspath(options.artifact))  # on the communicator's device
    function = module[plan.func]
    args = [session.broadcast(value) if isinstance(value, np.ndarray) else value for value in plan.args]
    for _ in range(options.warmup):
        function(*args)
    seconds, result = [], None
    for _ in range(max(options.repeat, 1)):
        start = time.perf_counter()
        result = function(*args)  # returns once every worker has finished the call
        seconds.append(time.perf_counter() - start)
    arrays = flatten(result.debug_get_from_remote(0), plan.record.get("ret") if plan.record else None)
    problems = compare(arrays, plan.expected, options.atol, options.rtol) if options.expected else []
    profile = None
    if options.profile:
        from ..disco import profile
    workers = profile.measure(session, function, args) if profile else None
    if options.json:
        extra = {"workers": session.num_workers, "ccl": session.ccl}
        if workers is not None:
            extra["profile"] = profile.profile_json(workers)
        _print_json(options, plan.func, arrays, seconds, problems, None, extra)
    else:
        _print_results(options, arrays, seconds, problems, None, plan.func)
        if workers is not None:
            sys.stderr.write(profile.profile_text(plan.func, session, workers))
    return EXIT_MISMATCH if problems else 0
