"""relaxrun --tracker-serve [HOST:]PORT and relaxrun --tracker-status HOST:PORT.

The tracker is secure by default as the server is (serve_main.py): loopback unless
--key-file is given. On start it prints `relaxrun: tracker on HOST:PORT` on stderr (the
real port when PORT is 0), then one line per registration, lease and release.
"""

from __future__ import annotations

import signal
import sys
import threading

from ..diagnostics import UserError
from . import auth
from .serve_main import is_loopback, parse_address
from .tracker import Tracker, TrackerConfig
from .tracker_client import connect_tracker

SCHEME = "tracker://"


def tracker_serve_main(address: str, key_file: str | None = None) -> int:
    host, port = parse_address(address, "--tracker-serve")
    key = auth.read_key_file(key_file) if key_file else None
    if key is None and not is_loopback(host):
        raise UserError(f"--tracker-serve '{address}': refusing a non-loopback address without --key-file "
                        "(anyone reaching the port could register a server or take one)")
    tracker = Tracker(TrackerConfig(host=host, port=port, key=key))

    def stop(signum, frame):
        tracker.stop()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    sys.stderr.write(f"relaxrun: tracker on {host}:{tracker.port}{' (key required)' if key else ''}\n")
    sys.stderr.flush()
    tracker.serve_forever()
    sys.stderr.write("relaxrun: tracker stopped\n")
    return 0


def tracker_status_main(address: str, key_file: str | None = None) -> int:
    host, port = parse_address(address, "--tracker-status")
    key = auth.read_key_file(key_file) if key_file else None
    with connect_tracker(host, port, key=key) as tracker:
        sys.stdout.write(format_status(tracker.status()))
    return 0


def format_status(pool: list[dict]) -> str:
    """One line per device key (servers, free, waiting), then one per server."""
    if not pool:
        return "no server registered\n"
    lines = []
    for group in pool:
        servers = group.get("servers") or []
        free = sum(1 for server in servers if server.get("client") is None)
        lines.append(f"{group.get('device_key')}: {len(servers)} servers, {free} free, "
                     f"{group.get('waiting', 0)} waiting")
        for server in servers:
            client = server.get("client")
            lines.append(f"  {server.get('address')}  " + (f"in use by {client}" if client else "free"))
    return "\n".join(lines) + "\n"


def parse_tracker_url(text: str) -> tuple[str, int, str]:
    """(host, port, device key) of `tracker://HOST:PORT/DEVICE-KEY`."""
    where, slash, device_key = text[len(SCHEME):].partition("/")
    if not slash or not device_key or "/" in device_key or not where:
        raise UserError(f"--remote '{text}': expected tracker://HOST:PORT/DEVICE-KEY")
    host, port = parse_address(where, "--remote")
    return host, port, device_key
