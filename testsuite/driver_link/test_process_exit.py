"""relaxc run as a program ends with os._exit once done (driver/process_exit.py): its
output still arrives whole and its exit codes are unchanged; called in-process, main()
returns the code."""

import gc
import pathlib
import subprocess
import sys

from relaxc.cli import main

TINY = pathlib.Path(__file__).resolve().parent.parent / "relaxld" / "Inputs" / "tiny.relax"


def _relaxc(*args):
    return subprocess.run([sys.executable, "-m", "relaxc", *args], capture_output=True, text=True)


def test_output_is_flushed_before_the_exit(capsys):
    assert main([str(TINY), "--emit", "ir"]) == 0
    in_process = capsys.readouterr().out
    run = _relaxc(str(TINY), "--emit", "ir")
    assert run.returncode == 0
    assert run.stdout == in_process and in_process.count("\n") >= 20


def test_exit_codes():
    assert _relaxc("--bogus").returncode == 2
    missing = _relaxc("/no/such/file.relax", "-o", "x.vmx")
    assert missing.returncode == 1 and "no such file" in missing.stderr
    assert main(["--bogus"]) == 2


def test_a_process_ending_fast_leaves_the_cycle_collector_off(monkeypatch):
    # Turned back on just before os._exit, the collector ran one full collection of all the
    # compile had left alive (0.04-0.06 s of a transformer build) for nothing.
    from relax.driver import process_exit
    from relax.driver.collector import cycle_collection_paused

    assert gc.isenabled()
    with cycle_collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    monkeypatch.setattr(process_exit, "_ENDING_FAST", True)
    try:
        with cycle_collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
