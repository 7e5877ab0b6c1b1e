"""The tracker's pool: registered servers per device key, and the clients waiting for one.

    pool.register(connection, "board", "10.0.0.5", 9090)   # a server's registration connection
    ticket = pool.acquire("board", client, gone)            # blocks until this client's turn
    pool.release(ticket)                                     # or: the client's connection ended

Clients of one device key are served first come, first served: each waits in a queue
and takes the first free server only at its head, so a later client never overtakes an
earlier one. A waiting client that disappears (`gone()` says so) leaves the queue; a
server whose registration connection ends leaves the pool, and a lease it held ends
with it. One lock and one condition guard everything: the pool is small (servers of a
lab, not of a data center), so clarity wins over finer locking.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque

from ..records import record

WAIT_POLL_SECONDS = 0.2  # how often a waiting client checks that it is still connected


@record(mutable=True)
class Entry:
    """One registered server: where clients reach it, and who holds it (None: free)."""

    number: int
    device_key: str
    host: str
    port: int
    owner: object  # the registration connection: the entry lives as long as it does
    client: str | None = None

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


class Pool:
    def __init__(self):
        self._entries: dict[int, Entry] = {}
        self._waiting: dict[str, deque] = {}
        self._numbers = itertools.count(1)
        self._changed = threading.Condition()

    def register(self, owner, device_key: str, host: str, port: int) -> Entry:
        with self._changed:
            entry = Entry(next(self._numbers), device_key, host, port, owner)
            self._entries[entry.number] = entry
            self._changed.notify_all()
            return entry

    def unregister(self, owner) -> list[Entry]:
        """Removes the servers registered over `owner` (a connection that ended)."""
        with self._changed:
            gone = [entry for entry in self._entries.values() if entry.owner is owner]
            for entry in gone:
                del self._entries[entry.number]
            self._changed.notify_all()
            return gone

    def acquire(self, device_key: str, client: str, gone, timeout: float | None = None) -> Entry | None:
        """A free server of `device_key`, now held by `client`; None if `gone()` turned true
        while waiting. No server registered under the key, or none free within `timeout`
        seconds, raises LookupError with the message the client gets."""
        turn = object()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            if not any(entry.device_key == device_key for entry in self._entries.values()):
                raise LookupError(f"no server is registered with device key '{device_key}' "
                                  f"(registered: {', '.join(self.keys()) or 'none'})")
            queue = self._waiting.setdefault(device_key, deque())
            queue.append(turn)
            try:
                while True:
                    free = self._free(device_key)
                    if queue[0] is turn and free is not None:
                        free.client = client
                        return free
                    if gone():
                        return None
                    if deadline is not None and time.monotonic() >= deadline:
                        raise LookupError(f"no server with device key '{device_key}' became free "
                                          f"in {timeout:g} s")
                    self._changed.wait(WAIT_POLL_SECONDS)
            finally:
                queue.remove(turn)
                if not queue:
                    del self._waiting[device_key]
                self._changed.notify_all()  # the next in the queue may go now

    def release(self, entry: Entry) -> None:
        with self._changed:
            entry.client = None
            self._changed.notify_all()

    def keys(self) -> list[str]:
        return sorted({entry.device_key for entry in self._entries.values()})

    def status(self) -> list[dict]:
        """The pool by device key: servers (address, client or null) and the number waiting."""
        with self._changed:
            keys = sorted(set(self.keys()) | set(self._waiting))
            return [{"device_key": key, "waiting": len(self._waiting.get(key, ())),
                     "servers": [{"address": entry.address, "client": entry.client}
                                 for entry in self._entries.values() if entry.device_key == key]}
                    for key in keys]

    def _free(self, device_key: str) -> Entry | None:
        for entry in self._entries.values():
            if entry.device_key == device_key and entry.client is None:
                return entry
        return None

