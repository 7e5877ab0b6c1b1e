"""relaxrun --remote HOST:PORT (or tracker://HOST:PORT/DEVICE-KEY): relaxrun's run (driver/run.py) with the artifact on a server.

    connect -> upload (skipped when the server holds the same bytes) -> load there -> bind
    and check the inputs here, against the signature the server read -> warm-up and timed
    runs there -> results, comparison and reports here, exactly as a local run prints them

Timings (--repeat, --warmup, --print-time) and --profile are measured on the server.
"""

from __future__ import annotations

import sys

from ..diagnostics import UserError
from ..driver.run import RunOptions, _print_json, _print_results
from ..driver.run_check import bind_inputs, parameters
from ..driver.run_compare import compare
from ..driver.run_inputs import parse_values
from ..driver.run_outputs import flatten
from ..driver.runner import EXIT_ERROR, EXIT_MISMATCH, ToolExit
from .auth import read_key_file
from .client import RemoteError, connect
from .remote_vm import RemoteVirtualMachine
from .serve_main import parse_address
from .tracker_client import connect_tracker
from .tracker_main import SCHEME, parse_tracker_url

LOCAL_ONLY = {"trace": "--trace", "plugins": "--plugin", "allow_python": "--allow-python", "trust": "--trust"}


def run_remote(options: RunOptions) -> int:
    for field, option in LOCAL_ONLY.items():
        if getattr(options, field):
            raise UserError(f"{option} cannot be used with --remote (it acts on this machine's runtime)")
    key = read_key_file(options.key_file) if options.key_file else None
    with _open_session(options, key) as session:
        if options.artifact == "-":
            name = session.upload_bytes(sys.stdin.buffer.read(), "<stdin>")
        else:
            name = session.upload(options.artifact, options.artifact)
        module = session.load_module(name)
        return _run_module(session, module, options)


def _open_session(options: RunOptions, key):
    """A session with the server --remote names, or with one its tracker lends."""
    if options.remote.startswith(SCHEME):
        host, port, device_key = parse_tracker_url(options.remote)
        with connect_tracker(host, port, key=key, tls_cert=options.tls_cert) as tracker:
            return tracker.request(device_key)
    host, port = parse_address(options.remote, "--remote")
    return connect(host, port, key=key, tls_cert=options.tls_cert)


def _run_module(session, module, options: RunOptions) -> int:
    from ..vm.bytecode.signature import format_signature

    if options.list_functions:
        for info in module.functions.values():
            record = info.get("signature")
            sys.stdout.write((format_signature(record) if record else
                              f"{info['name']}({', '.join(info.get('param_names') or [])})") + "\n")
        return 0
    func = options.func or "main"
    info = module.functions.get(func)
    if info is None:
        names = ", ".join(module.functions) or "none"
        raise UserError(f"'{options.artifact}' has no function '{func}' (functions: {names}; see --list-functions)")
    record = info.get("signature")
    params = parameters(record, info.get("param_names") or [], int(info.get("num_args", 0)))
    args = bind_inputs(func, params, parse_values(options.inputs))
    expected = parse_values(options.expected, "--expected-output")
    try:
        vm = RemoteVirtualMachine(module, options.device, memory=options.memory, exec_mode=options.exec_mode)
        if options.verbose:
            sys.stderr.write(f"relaxrun: remote {session.address}, exec mode {vm.exec_mode}\n")
        result, seconds = vm.run(func, args, options.warmup, options.repeat)
        report = vm.profile(func, *args) if options.profile else None
    except RemoteError as error:
        sys.stderr.write(f"relaxrun: error: {error.message}\n")
        if error.backtrace:
            sys.stderr.write("VM backtrace (outermost first):\n" + error.backtrace)
        raise ToolExit(EXIT_ERROR) from None
    arrays = flatten(result, record.get("ret") if record else None)
    problems = compare(arrays, expected, options.atol, options.rtol) if options.expected else []
    if options.json:
        _print_json(options, func, arrays, seconds, problems, report)
    else:
        _print_results(options, arrays, seconds, problems, report, func)
    return EXIT_MISMATCH if problems else 0
