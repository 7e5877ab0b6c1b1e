"""StageProgress (relax.driver.progress): nothing for a quick build, a transient line per
stage on a terminal for a slow one, and the -v timings."""

import io
import time

from rich.console import Console

from relax.driver.progress import StageProgress


def _terminal():
    buffer = io.StringIO()
    return buffer, Console(file=buffer, force_terminal=True, width=100)


def test_a_quick_build_shows_nothing():
    buffer, console = _terminal()
    with StageProgress("relaxc", 2, delay=5.0, console=console) as progress:
        progress.stage("parse")
        progress.stage("link")
    assert buffer.getvalue() == ""
    assert [name for name, _ in progress.timings] == ["parse", "link"]


def test_a_slow_build_shows_the_current_stage():
    buffer, console = _terminal()
    with StageProgress("relaxc", 2, delay=0.05, console=console) as progress:
        progress.stage("parse")
        time.sleep(0.3)
        progress.stage("kernels for aarch64-linux-gnu")
        time.sleep(0.3)
    shown = buffer.getvalue()
    assert "relaxc: [1/2] parse" in shown and "relaxc: [2/2] kernels for aarch64-linux-gnu" in shown


def test_not_a_terminal_shows_nothing(capsys):
    with StageProgress("relaxc", 1, delay=0.0) as progress:  # pytest's stderr is not a terminal
        progress.stage("parse")
        time.sleep(0.1)
    assert capsys.readouterr().err == ""
    assert progress.report().startswith("relaxc: parse: ")
