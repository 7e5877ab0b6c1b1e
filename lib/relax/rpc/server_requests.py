"""The server's answer to each request of a session (docs/rpc.md lists them).

    has         is this artifact (sha256) in the store?      upload   store bytes under a name
    load        load an upload as relax.vm.load does        vm       a VirtualMachine on a module
    call        run a function                               run      warm-up and timed runs (relaxrun)
    time        time_evaluator                               profile  time per called function
    set_input / invoke_stateful / get_outputs                the stateful calling convention

A request that fails for a reason of the user's (UserError, VMError: a bad artifact, a
wrong input, a failing model) is answered with an error message and the session goes on.
"""

from __future__ import annotations

import time

from ..diagnostics import UserError
from ..runtime.errors import VMError
from .framing import Message, ProtocolError
from .values import decode_value, encode_value

MAX_NAME = 255
MAX_REPEAT = 1 << 20


def handle(state, message: Message) -> Message:
    op = message.header.get("op")
    handler = HANDLERS.get(op) if isinstance(op, str) else None
    if handler is None:
        raise ProtocolError(f"unknown request {str(op)[:40]!r}")
    try:
        header, blobs = handler(state, message)
    except VMError as error:
        return Message({"type": "error", "message": error.message, "backtrace": error.format_backtrace()})
    except UserError as error:
        return Message({"type": "error", "message": str(error)})
    return Message({"type": "ok", **header}, blobs)


# ---- uploads and modules -----------------------------------------------------------------

def _has(state, message):
    digest = _text(message.header, "sha256")
    return {"present": state.server.store.has(digest)}, []


def _upload(state, message):
    name = _text(message.header, "name")
    store = state.server.store
    if message.blobs:
        data = message.blobs[0]
        limit = state.server.config.max_upload_bytes
        if len(data) > limit:
            raise UserError(f"'{name}': {len(data)} bytes exceed the server's upload limit of {limit} bytes")
        digest = store.add(data)
    else:  # the client learned from "has" that the store holds it: the bytes are not sent again
        digest = _text(message.header, "sha256")
        if not store.has(digest):
            raise UserError(f"'{name}': the server no longer holds sha256 {digest[:16]}; upload it again")
    if digest not in state.uploads.values() and not store.copy_to(digest, state.file(digest)):
        raise UserError(f"'{name}': the server no longer holds sha256 {digest[:16]}; upload it again")
    state.uploads[name] = digest
    return {"sha256": digest}, []


def _load(state, message):
    from ..vm.bytecode.isa import FuncKind
    from ..vm.bytecode.loader import load_bytes
    from ..vm.bytecode.signature import function_signatures

    name = _text(message.header, "name")
    if name not in state.uploads:
        raise UserError(f"'{name}': no such file uploaded in this session")
    digest = state.uploads[name]
    with open(state.file(digest), "rb") as handle:
        data = handle.read()
    with state.server.load_lock:
        exe = load_bytes(data, name)  # what relax.vm.load does: the same checks, the same messages
    state.modules.append((exe, name))
    state.artifacts.append(digest)
    signatures = function_signatures(exe)
    functions = [{"name": info.name, "param_names": list(info.param_names), "num_args": info.num_args,
                  "signature": signatures.get(info.name)}
                 for info in exe.func_table if info.kind == FuncKind.VM_FUNC]
    return {"module": len(state.modules) - 1, "sha256": digest, "functions": functions}, []


def _vm(state, message):
    from ..driver.run import RunOptions, make_vm

    header = message.header
    exe, name = _item(state.modules, header, "module")
    exec_mode = header.get("exec_mode")
    options = RunOptions(artifact=name, device=_text(header, "device"), memory=_text(header, "memory"),
                         exec_mode=None if exec_mode is None else _text(header, "exec_mode"))
    with state.server.load_lock:
        vm = make_vm(exe, options)  # the checks relaxrun makes, with its messages
    state.vms.append(vm)
    return {"vm": len(state.vms) - 1, "exec_mode": vm.exec_mode, "native_functions": list(vm.native_functions)}, []


# ---- running -----------------------------------------------------------------------------

def _call(state, message):
    vm, func, args = _call_parts(state, message)
    return _result(vm[func](*args))


def _run(state, message):
    """relaxrun's runs: `warmup` untimed, then `repeat` timed, each timed alone; the last result."""
    vm, func, args = _call_parts(state, message)
    warmup = _count(message.header, "warmup", 0)
    repeat = _count(message.header, "repeat", 1)
    function = vm[func]
    for _ in range(warmup):
        function(*args)
    seconds, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args)
        seconds.append(time.perf_counter() - start)
    header, blobs = _result(result)
    return {**header, "seconds": seconds}, blobs


def _time(state, message):
    vm, func, args = _call_parts(state, message)
    header = message.header
    evaluate = vm.time_evaluator(func, number=_count(header, "number", 10, 1), repeat=_count(header, "repeat", 1, 1),
                                 min_repeat_ms=_number(header, "min_repeat_ms"),
                                 cooldown_interval_ms=_number(header, "cooldown_interval_ms"),
                                 repeats_to_cooldown=_count(header, "repeats_to_cooldown", 1, 1))
    return {"results": list(evaluate(*args).results)}, []


def _profile(state, message):
    vm, func, args = _call_parts(state, message)
    vm.profile(func, *args)  # once untimed, as relaxrun --profile does
    report = vm.profile(func, *args)
    return {"rows": [[row.name, row.calls, row.seconds] for row in report.rows], "total": report.total}, []


def _set_input(state, message):
    vm, func, args = _call_parts(state, message)
    vm.set_input(func, *args)
    return {}, []


def _invoke_stateful(state, message):
    vm = _item(state.vms, message.header, "vm")
    vm.invoke_stateful(_text(message.header, "func"))
    return {}, []


def _get_outputs(state, message):
    vm = _item(state.vms, message.header, "vm")
    return _result(vm.get_outputs(_text(message.header, "func")))


HANDLERS = {
    "has": _has, "upload": _upload, "load": _load, "vm": _vm, "call": _call, "run": _run, "time": _time,
    "profile": _profile, "set_input": _set_input, "invoke_stateful": _invoke_stateful, "get_outputs": _get_outputs,
}


# ---- reading requests --------------------------------------------------------------------

def _result(value):
    blobs: list[bytes] = []
    return {"result": encode_value(value, blobs)}, blobs


def _call_parts(state, message):
    vm = _item(state.vms, message.header, "vm")
    args = message.header.get("args", [])
    if not isinstance(args, list):
        raise ProtocolError("'args' is not a list")
    return vm, _text(message.header, "func"), tuple(decode_value(arg, message.blobs) for arg in args)


def _item(items: list, header: dict, key: str):
    index = header.get(key)
    if type(index) is not int or not 0 <= index < len(items):
        raise ProtocolError(f"no {key} {str(index)[:20]} in this session")
    return items[index]


def _text(header: dict, key: str) -> str:
    value = header.get(key)
    if not isinstance(value, str) or not 0 < len(value) <= MAX_NAME or "\0" in value:
        raise ProtocolError(f"'{key}' is not a name of 1 to {MAX_NAME} characters")
    return value


def _count(header: dict, key: str, default: int, low: int = 0) -> int:
    value = header.get(key, default)
    if type(value) is not int or not low <= value <= MAX_REPEAT:
        raise ProtocolError(f"'{key}' is not a count from {low} to {MAX_REPEAT}")
    return value


def _number(header: dict, key: str) -> float:
    value = header.get(key, 0)
    if type(value) not in (int, float) or not 0 <= value <= 3.6e6:
        raise ProtocolError(f"'{key}' is not a number of milliseconds from 0 to 3600000")
    return float(value)
