"""A tool run as a program holds numpy's BLAS to one thread (driver/blas_threads.py),
unless the user chose a thread count; a library caller's process is left alone. (And the
runner tells a server's command line apart, for driver/malloc_reuse.py.)"""

import os
import subprocess
import sys

import pytest

from relax.driver.blas_threads import THREAD_COUNT_VARIABLES, hold_blas_to_one_thread

PROBE = """
import os, sys, click
from relax.driver.runner import run_command

@click.command()
def command():
    import numpy
    numpy.ones((64, 64)) @ numpy.ones((64, 64))
    tasks = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1
    print(os.environ.get("OPENBLAS_NUM_THREADS", "unset"), tasks)

as_program = sys.argv.pop(1) == "program"
run_command(command, "probe", None if as_program else [])
"""


def _probe(mode: str, **variables) -> list[str]:
    env = {name: value for name, value in os.environ.items() if name not in THREAD_COUNT_VARIABLES}
    run = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env={**env, **variables})
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_a_tool_process_starts_no_blas_threads():
    setting, tasks = _probe("program")
    assert setting == "1"
    if tasks != "-1":
        assert tasks == "1"  # the main thread alone: OpenBLAS started none


def test_the_users_thread_count_is_kept():
    assert _probe("program", OPENBLAS_NUM_THREADS="3")[0] == "3"
    assert _probe("program", OMP_NUM_THREADS="2")[0] == "unset"


def test_a_library_callers_process_is_left_alone():
    assert _probe("library")[0] == "unset"


@pytest.mark.parametrize("preset", [{}, {"GOTO_NUM_THREADS": "4"}])
def test_nothing_changes_once_numpy_is_imported(preset):
    import numpy  # noqa: F401 - what the check looks for

    environ = dict(preset)
    assert not hold_blas_to_one_thread(environ)
    assert environ == preset


def test_a_server_is_told_apart_by_its_options():
    # relaxrun --serve runs for long: it keeps glibc's memory defaults (driver/malloc_reuse.py).
    from relax.driver.runner import serves

    options = ("--serve", "--tracker-serve")
    assert serves(["--serve", "0.0.0.0:9090", "--key-file", "k"], options)
    assert serves(["--tracker-serve=0.0.0.0:9190"], options)
    assert not serves(["model.vmx", "--input", "x.npy"], options)
    assert not serves(["--serve-x"], options) and not serves(["--serve"], ())
