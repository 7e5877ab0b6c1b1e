"""A ProcessSession worker: `python -m relax.disco.worker --controller HOST:PORT --authkey-env NAME`.

mpiexec starts one per rank. Each connects back to the controller over an authenticated
multiprocessing connection (the key is read from the environment variable NAME, never
from the command line, where `ps` shows it), says its rank, then answers commands until
"shutdown" or until the controller's connection closes. Collectives go over MPI's
COMM_WORLD. A watchdog ends the worker when the controller process is gone, so a worker
blocked in a collective does not outlive it.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

WATCHDOG_SECONDS = 1.0


def _parse(argv):
    parser = argparse.ArgumentParser(prog="python -m relax.disco.worker")
    parser.add_argument("--controller", required=True, help="HOST:PORT of the controller's listener")
    parser.add_argument("--authkey-env", required=True, help="environment variable holding the key (hex)")
    parser.add_argument("--controller-pid", type=int, default=0, help="end when this process is gone")
    parser.add_argument("--plugin", action="append", default=[], help="Python file run first (registers functions)")
    return parser.parse_args(argv)


def _watch(pid: int) -> None:
    while True:
        time.sleep(WATCHDOG_SECONDS)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(3)
        except PermissionError:
            pass  # it exists, under another user


def _make_communicator(backend: str, setup, executor):
    from .ccl import rank_communicator

    return rank_communicator("ProcessSession", backend, setup, executor)


def serve(connection, executor) -> None:
    """Answers the controller's commands until shutdown or until its connection closes."""
    from .protocol import decode_command, encode_answer

    executor.bind()
    while True:
        try:
            data = connection.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            command = decode_command(data)
        except Exception as error:  # noqa: BLE001 - a malformed command is answered, not fatal
            connection.send_bytes(encode_answer(("error", f"bad command: {error}", False)))
            continue
        answer = executor.handle(command)
        connection.send_bytes(encode_answer(answer))
        if command.kind == "shutdown":
            return


def main(argv=None) -> int:
    options = _parse(sys.argv[1:] if argv is None else argv)
    if options.controller_pid:
        threading.Thread(target=_watch, args=(options.controller_pid,), daemon=True).start()
    from multiprocessing.connection import Client

    from mpi4py import MPI

    from .executor import Executor

    for plugin in options.plugin:
        from ..vm.machine.py_functions import run_plugin

        run_plugin(plugin)
    host, _, port = options.controller.rpartition(":")
    key = bytes.fromhex(os.environ.get(options.authkey_env, ""))
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    connection = Client((host, int(port)), authkey=key)
    connection.send_bytes(f"{rank} {size}".encode())
    try:
        serve(connection, Executor(rank, size, ccl_factory=_make_communicator))
    finally:
        connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
