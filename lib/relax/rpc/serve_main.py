"""relaxrun --serve [HOST:]PORT: an RPC server until SIGINT or SIGTERM.

Secure by default: the host defaults to 127.0.0.1, and binding any address that is not
loopback without --key-file is refused (anyone who reaches the port could run code on
the machine). On start it prints `relaxrun: serving on HOST:PORT` on stderr (with the
real port when PORT is 0), then one line per session.
"""

from __future__ import annotations

import ipaddress
import shutil
import signal
import socket
import sys
import threading

from ..diagnostics import UserError
from . import auth
from .server import Server, ServerConfig


def parse_address(text: str, option: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """(host, port) of `[HOST:]PORT`; an IPv6 host goes in brackets ([::1]:9090)."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or default_host
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UserError(f"{option} '{text}': expected [HOST:]PORT with PORT from 0 to 65535")
    return host, int(port)


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(entry[4][0]).is_loopback for entry in found)


def serve_main(address: str, key_file: str | None = None, tls_cert: str | None = None, tls_key: str | None = None,
               workdir: str | None = None, max_upload_bytes: int | None = None,
               idle_timeout: float | None = None, tracker: str | None = None, device_key: str | None = None,
               plugins: tuple[str, ...] = ()) -> int:
    host, port = parse_address(address, "--serve")
    from ..vm.machine.py_functions import run_plugin

    for plugin in plugins:  # host functions the served artifacts call, registered once for every session
        run_plugin(plugin)
    key = auth.read_key_file(key_file) if key_file else None
    if key is None and not is_loopback(host):
        raise UserError(f"--serve '{address}': refusing to serve on a non-loopback address without --key-file "
                        "(anyone reaching the port could run code here)")
    config = ServerConfig(host=host, port=port, key=key, tls=auth.server_tls(tls_cert, tls_key), workdir=workdir)
    if max_upload_bytes is not None:
        config.max_upload_bytes = max_upload_bytes
    if idle_timeout is not None:
        config.idle_timeout = idle_timeout
    if (tracker is None) != (device_key is None):
        raise UserError("--tracker and --device-key go together (with --serve)")
    server = Server(config)

    def stop(signum, frame):
        server.stop()  # the accept loop sees it within ACCEPT_POLL_SECONDS and shuts down

    # Handlers go in before the first line: whoever reads it may signal at once.
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGINT)}
    sys.stderr.write(f"relaxrun: serving on {host}:{server.port}"
                     f"{' (TLS)' if config.tls else ''}{' (key required)' if key else ''}\n")
    sys.stderr.flush()
    try:
        registration = _registration(server, tracker, device_key) if tracker else None
    except UserError:
        for number, handler in previous.items():
            signal.signal(number, handler)
        raise
    try:
        server.serve_forever()
    finally:
        if registration is not None:
            registration.stop()
    sys.stderr.write("relaxrun: server stopped\n")
    return 0


def _registration(server: Server, tracker: str, device_key: str):
    """Joins the tracker's pool (tracker_client.Registration); the server stops if it cannot."""
    from .tracker_client import Registration

    host, port = parse_address(tracker, "--tracker")
    registration = Registration((host, port), device_key, server.config.host, server.port, server.config.key,
                                server.config.log)
    try:
        registration.register()
    except UserError:
        server.socket.close()
        shutil.rmtree(server.folder, ignore_errors=True)
        raise
    return registration
