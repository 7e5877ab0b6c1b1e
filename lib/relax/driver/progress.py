"""A one-line progress display for multi-stage builds, on stderr, on a terminal only.

    with StageProgress("relaxc", total=6) as progress:
        progress.stage("parse")
        ...
        progress.stage("kernels for x86_64-unknown-linux-gnu")

Nothing appears for a build that ends within `delay` seconds (CLI.md: progress only
for steps longer than about a second), nor when stderr is not a terminal. After
that, a rich spinner line shows the current stage ("relaxc: [4/6] kernels ..."); it is
transient, so a successful build leaves the terminal as it found it. `timings`
keeps (stage, seconds) for `-v`.
"""

from __future__ import annotations

import sys
import threading
import time


class StageProgress:
    def __init__(self, tool: str, total: int, delay: float = 1.0, console=None):
        self.tool = tool
        self.total = total
        self.delay = delay
        self.timings: list[tuple[str, float]] = []
        self._console = console
        self._enabled = console is not None or sys.stderr.isatty()
        self._lock = threading.Lock()
        self._live = None
        self._timer: threading.Timer | None = None
        self._stage = ""
        self._stage_start = 0.0

    def __enter__(self) -> "StageProgress":
        if self._enabled:
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _text(self):
        from rich.spinner import Spinner

        return Spinner("dots", text=f"{self.tool}: [{len(self.timings) + 1}/{self.total}] {self._stage}", style="cyan")

    def _show(self) -> None:
        from rich.console import Console
        from rich.live import Live

        with self._lock:
            if self._timer is None:  # finished meanwhile
                return
            console = self._console or Console(stderr=True)
            self._live = Live(self._text(), console=console, transient=True, refresh_per_second=8)
            self._live.start()

    def _close_stage(self) -> None:
        if self._stage:
            self.timings.append((self._stage, time.monotonic() - self._stage_start))

    def stage(self, description: str) -> None:
        """Marks the start of the next stage (and the end of the previous one)."""
        self._close_stage()
        self._stage, self._stage_start = description, time.monotonic()
        with self._lock:
            if self._live is not None:
                self._live.update(self._text())

    def __exit__(self, *exc) -> None:
        self._close_stage()
        self._stage = ""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._live is not None:
                self._live.stop()
                self._live = None

    def report(self) -> str:
        """`-v` lines: the time of each stage."""
        return "".join(f"{self.tool}: {name}: {seconds:.2f} s\n" for name, seconds in self.timings)
