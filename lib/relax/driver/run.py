"""What `relaxrun` does, as a library function: load, check inputs, run, report.

The click command in relaxrun/cli.py gathers options into RunOptions and calls
`run_main`. Only the runtime is imported (relax.vm, relax.runtime), never the
compiler, so an artifact runs where only the runtime's needs are installed. Steps:

    plugins -> load the artifact -> pick the function -> bind and check the inputs
    (before anything runs) -> warm-up and timed runs -> results: text, files, JSON,
    comparison with --expected-output -> --profile table
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from ..diagnostics import UserError
from ..records import record
from ..runtime.cuda.support import cuda_problem
from ..runtime.errors import VMError
from .run_check import bind_inputs, parameters
from .run_compare import compare
from .run_inputs import parse_values
from .run_outputs import flatten, json_result, results_text, write_output_dir, write_outputs
from .runner import EXIT_ERROR, EXIT_MISMATCH, ToolExit

TOOL = "relaxrun"


@record
class RunOptions:
    artifact: str
    func: str | None = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    output_dir: str | None = None
    expected: tuple[str, ...] = ()
    atol: float = 1e-5
    rtol: float = 1e-4
    device: str = "cpu"
    memory: str = "pooled"
    exec_mode: str | None = None  # None: what the artifact asks for, else compiled (interp for a recursive program)
    repeat: int = 1
    warmup: int = 0
    print_time: bool = False
    profile: bool = False
    trace: bool = False
    json: bool = False
    list_functions: bool = False
    print_max_elements: int = 1024
    plugins: tuple[str, ...] = ()
    allow_python: bool = False  # R.call_py_func may run the Python sources embedded in the artifact
    trust: tuple[str, ...] = ()  # public key files or directories: only artifacts they signed run
    verbose: int = 0
    remote: str | None = None  # HOST:PORT of a relax.rpc server (relaxrun --remote): run there
    key_file: str | None = None  # the server's shared key
    tls_cert: str | None = None  # the server's certificate (or CA): connect with TLS
    workers: int | None = None  # run on this many local Disco workers (relaxrun --workers, run_workers.py)
    ccl: str | None = None  # their communicator: mpi (default), threads, nccl
    mpi: bool = False  # run as the ranks of the user's mpiexec job (relaxrun --mpi)


def run_main(options: RunOptions) -> int:
    if options.workers is not None or options.mpi or options.ccl is not None:
        from .run_workers import run_workers

        return run_workers(options)
    if options.remote is not None:
        from ..rpc.remote_run import run_remote

        return run_remote(options)
    return _run_local(options)


def _run_local(options: RunOptions) -> int:
    from ..vm.machine.py_functions import run_plugin  # the VM's loader: relax.load(plugins=) runs the same

    for plugin in options.plugins:
        run_plugin(plugin)
    exe = load_artifact(options.artifact, options.trust)
    if options.list_functions:
        sys.stdout.write(list_functions_text(exe))
        return 0
    from ..vm.bytecode.signature import function_signatures

    func = options.func or "main"
    info = _function_info(exe, func, options.artifact)
    record = function_signatures(exe).get(func)
    params = parameters(record, info.param_names, info.num_args)
    args = bind_inputs(func, params, parse_values(options.inputs))
    if options.verbose:
        _say_what(options, func, record, params, args)
    expected = parse_values(options.expected, "--expected-output")
    vm = make_vm(exe, options)
    if options.verbose:
        sys.stderr.write(f"{TOOL}: exec mode {vm.exec_mode}\n")
        if vm.exec_mode == "compiled":
            sys.stderr.write(f"{TOOL}: native host functions: {', '.join(vm.native_functions) or 'none'}\n")
    result, seconds = _run(vm, func, args, options)
    arrays = flatten(result, record.get("ret") if record else None)
    problems = compare(arrays, expected, options.atol, options.rtol) if options.expected else []
    report = _profile(vm, func, args) if options.profile else None
    if options.json:
        _print_json(options, func, arrays, seconds, problems, report)
    else:
        _print_results(options, arrays, seconds, problems, report, func)
    return EXIT_MISMATCH if problems else 0


# ---- set-up ------------------------------------------------------------------------------

def load_artifact(path: str, trust: tuple[str, ...] = ()):
    """The executable of `path`; with `trust` (--trust), only if one of those keys signed it."""
    from ..vm.bytecode.loader import load, load_bytes

    keys = None
    if trust:
        from ..vm.artifact.signing import trusted_keys

        keys = trusted_keys(trust)  # the keys first: a bad --trust is reported whatever the artifact
    if path == "-":
        return load_bytes(sys.stdin.buffer.read(), "<stdin>", keys)
    try:
        return load(path, keys)
    except UserError as error:
        if path.endswith((".relax", ".py", ".vms")):
            raise UserError(f"{error} (relaxrun runs compiled artifacts: "
                            f"relaxc {path} -o {os.path.splitext(path)[0]}.vmx first)") from None
        raise


def _function_info(exe, func: str, artifact: str):
    from ..vm.bytecode.isa import FuncKind

    functions = [info for info in exe.func_table if info.kind == FuncKind.VM_FUNC]
    for info in functions:
        if info.name == func:
            return info
    names = ", ".join(info.name for info in functions) or "none"
    raise UserError(f"'{artifact}' has no function '{func}' (functions: {names}; see --list-functions)")


def list_functions_text(exe) -> str:
    from ..vm.bytecode.isa import FuncKind
    from ..vm.bytecode.signature import format_signature, function_signatures

    signatures = function_signatures(exe)
    lines = []
    for info in exe.func_table:
        if info.kind != FuncKind.VM_FUNC:
            continue
        record = signatures.get(info.name)
        lines.append(format_signature(record) if record else f"{info.name}({', '.join(info.param_names)})")
    return "".join(line + "\n" for line in lines)


def make_vm(exe, options: RunOptions):
    from ..runtime.device import CUDA, Device
    from ..vm.machine.virtual_machine import VirtualMachine

    device = Device.parse(options.device)
    if device.device_type == CUDA:
        problem = cuda_problem()
        if problem is not None:
            raise UserError(f"device {device} is not available: {problem}")
    from ..vm.machine.py_functions import UnboundPythonFunction

    try:
        vm = VirtualMachine(exe, device, memory=options.memory, exec_mode=options.exec_mode,
                            allow_python=options.allow_python)
    except UnboundPythonFunction as error:  # before anything runs
        raise UserError(f"'{options.artifact}': {error}") from None
    if vm.unresolved_functions:
        names = ", ".join(f"'{name}'" for name in vm.unresolved_functions[:6])
        more = f" and {len(vm.unresolved_functions) - 6} more" if len(vm.unresolved_functions) > 6 else ""
        raise UserError(f"'{options.artifact}' calls functions that are neither in it nor registered: {names}{more} "
                        "(link kernels with relaxld, or register host functions with --plugin FILE.py)")
    return vm


def _say_what(options: RunOptions, func: str, record, params, args) -> None:
    from ..vm.bytecode.signature import format_signature
    from .run_trace import describe

    sys.stderr.write(f"{TOOL}: running {format_signature(record) if record else func}\n")
    for (name, _), value in zip(params, args):
        sys.stderr.write(f"{TOOL}:   {name} = {describe(value)}\n")
    sys.stderr.write(f"{TOOL}: device {options.device}, memory {options.memory}, "
                     f"{options.warmup} warm-up and {options.repeat} timed run(s)\n")


# ---- running -----------------------------------------------------------------------------

def _run(vm, func: str, args: list, options: RunOptions):
    """The result of the last run and the seconds of each timed run."""
    try:
        if options.trace:
            from .run_trace import trace_call

            return trace_call(vm, func, tuple(args)), []
        function = vm[func]
        for _ in range(options.warmup):
            function(*args)
        seconds = []
        result = None
        for _ in range(max(options.repeat, 1)):
            start = time.perf_counter()
            result = function(*args)
            seconds.append(time.perf_counter() - start)
        return result, seconds
    except VMError as error:
        _report_runtime_error(error)
        raise ToolExit(EXIT_ERROR) from None


def _report_runtime_error(error: VMError) -> None:
    sys.stderr.write(f"{TOOL}: error: {error.message}\n")
    if error.backtrace:
        sys.stderr.write("VM backtrace (outermost first):\n" + error.format_backtrace())


def _profile(vm, func: str, args: list):
    try:
        vm.profile(func, *args)  # once untimed: the instrumented code's first-call effects stay out
        return vm.profile(func, *args)
    except VMError as error:
        _report_runtime_error(error)
        raise ToolExit(EXIT_ERROR) from None


# ---- reporting ---------------------------------------------------------------------------

def timing_line(func: str, seconds: list[float]) -> str:
    ms = [s * 1e3 for s in seconds]
    return (f"{TOOL}: time: {func}: min {min(ms):.4f} ms, median {statistics.median(ms):.4f} ms, "
            f"max {max(ms):.4f} ms ({len(ms)} run{'s' if len(ms) != 1 else ''})\n")


def _print_results(options: RunOptions, arrays, seconds, problems, report, func: str) -> None:
    if options.output_dir is not None:
        write_output_dir(arrays, options.output_dir)
    if options.outputs:
        write_outputs(arrays, options.outputs, options.print_max_elements)
    if options.output_dir is None and not options.outputs and not options.expected:
        sys.stdout.write(results_text(arrays, options.print_max_elements))
    if options.expected:
        sys.stdout.write("".join(f"{problem}\n" for problem in problems) if problems else "[SUCCESS]\n")
    sys.stdout.flush()
    if options.print_time and seconds:
        sys.stderr.write(timing_line(func, seconds))
    if report is not None:
        sys.stderr.write(str(report))


def _print_json(options: RunOptions, func: str, arrays, seconds, problems, report, extra=None) -> None:
    written = []
    if options.output_dir is not None:
        written = write_output_dir(arrays, options.output_dir)
    if options.outputs:
        write_outputs(arrays, options.outputs, options.print_max_elements)
        written = list(options.outputs)
    document = {"function": func, "results": [json_result(i, a, not written) for i, a in enumerate(arrays)]}
    if written:
        document["files"] = written
    if seconds and (options.print_time or options.repeat > 1):
        document["time_ms"] = {"min": min(seconds) * 1e3, "median": statistics.median(seconds) * 1e3,
                               "max": max(seconds) * 1e3, "runs": len(seconds)}
    if options.expected:
        document["check"] = {"success": not problems, "atol": options.atol, "rtol": options.rtol,
                             "failures": [{"index": p.index, "message": p.message} for p in problems]}
    if report is not None:
        document["profile"] = [{"name": row.name, "calls": row.calls, "total_us": row.seconds * 1e6,
                                "mean_us": row.seconds * 1e6 / row.calls,
                                "percent": 100.0 * row.seconds / report.total if report.total else 0.0}
                               for row in sorted(report.rows, key=lambda r: -r.seconds)]
    document.update(extra or {})  # relaxrun --workers: the workers, the ccl, their profile
    sys.stdout.write(json.dumps(document, allow_nan=False) + "\n")
