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


PROBE = """
import gc, sys, click
from relax.driver.runner import run_command

@click.command()
def command():
    print("on" if gc.isenabled() else "off")

as_program = sys.argv.pop(1) == "program"  # the command line left empty either way
run_command(command, "probe", None if as_program else [], fast_exit=True)
print("returned", "on" if gc.isenabled() else "off")
"""


def test_a_tool_process_runs_its_command_with_the_collector_off():
    # From the start of the command, not only the compile: the toolchain's imports inside
    # it ran dozens of collections.
    as_program = subprocess.run([sys.executable, "-c", PROBE, "program"], capture_output=True, text=True)
    assert as_program.returncode == 0, as_program.stderr
    assert as_program.stdout.split() == ["off"]  # ended by os._exit: never returned
    in_process = subprocess.run([sys.executable, "-c", PROBE, "library"], capture_output=True, text=True)
    assert in_process.stdout.split() == ["on", "returned", "on"]
