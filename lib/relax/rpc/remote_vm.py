"""A VirtualMachine that runs on the server: relax.VirtualMachine(remote_module, session.cpu()).

The same calling forms as a local VM (vm/machine/function_api.py): `vm["main"](*args)`,
`time_evaluator(...)` (measured on the server), `set_input` / `invoke_stateful` /
`get_outputs`, `profile`. Arguments travel as values.py encodes them; results come back
as numpy arrays, ints, floats, shapes and tuples of those.
"""

from __future__ import annotations

from ..diagnostics import UserError
from ..vm.machine.profiling import BenchmarkResult, ProfileRow, Report
from .framing import ProtocolError
from .values import decode_value, encode_value


class RemoteVirtualMachine:
    def __init__(self, exe, device="cpu", memory: str = "pooled", exec_mode: str | None = None, **_ignored):
        self.exe = exe
        self.session = exe.remote_session
        spelled = str(device[0] if isinstance(device, (list, tuple)) else device)
        reply = self.session.request({"op": "vm", "module": exe.index, "device": spelled, "memory": memory,
                                      "exec_mode": exec_mode}).header
        self.index = reply.get("vm")
        self.exec_mode = reply.get("exec_mode")
        self.native_functions = list(reply.get("native_functions") or [])

    def __getitem__(self, name: str):
        def call(*args):
            return self._value(self._request("call", name, args))

        call.__name__ = name
        return call

    def run(self, func_name: str, args, warmup: int = 0, repeat: int = 1):
        """relaxrun's runs on the server: (the last result, seconds of each timed run)."""
        reply = self._request("run", func_name, args, warmup=warmup, repeat=repeat)
        return self._value(reply), [float(s) for s in reply.header.get("seconds", [])]

    def time_evaluator(self, func_name: str, dev=None, number: int = 10, repeat: int = 1, min_repeat_ms: float = 0,
                       cooldown_interval_ms: float = 0, repeats_to_cooldown: int = 1):
        def evaluate(*args) -> BenchmarkResult:
            reply = self._request("time", func_name, args, number=number, repeat=repeat, min_repeat_ms=min_repeat_ms,
                                  cooldown_interval_ms=cooldown_interval_ms, repeats_to_cooldown=repeats_to_cooldown)
            return BenchmarkResult(tuple(float(s) for s in reply.header.get("results", [])))

        return evaluate

    def profile(self, func_name: str, *args) -> Report:
        """The server's second profiled run (the first stays untimed, as relaxrun --profile does)."""
        reply = self._request("profile", func_name, args).header
        rows = [ProfileRow(str(name), int(calls), float(seconds)) for name, calls, seconds in reply.get("rows", [])]
        return Report(rows, float(reply.get("total", 0.0)))

    def set_input(self, func_name: str, *args) -> None:
        self._request("set_input", func_name, args)

    def invoke_stateful(self, func_name: str) -> None:
        self._request("invoke_stateful", func_name, ())

    def get_outputs(self, func_name: str):
        return self._value(self._request("get_outputs", func_name, ()))

    def _request(self, op: str, func_name: str, args, **fields):
        blobs: list[bytes] = []
        header = {"op": op, "vm": self.index, "func": func_name, **fields}
        if args:
            header["args"] = [encode_value(arg, blobs) for arg in args]
        return self.session.request(header, blobs)

    def _value(self, reply):
        try:
            return decode_value(reply.header.get("result"), reply.blobs)
        except ProtocolError as error:
            raise UserError(f"the server {self.session.address} sent a malformed result: {error}") from None
