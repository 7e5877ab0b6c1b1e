"""call_with_frame_room (frame_room.py): a recursion that goes up and down across CPython's
16 KiB frame chunks maps and faults in fresh chunks each time, and with frame room it does
not; the tools' commands (driver/runner.py) and the kernel lowering's thread
(codegen/fresh_stack.py) run with it. Counted in the calling thread's page faults."""

import resource
import threading

import click
import pytest

from relax.codegen.fresh_stack import call_on_fresh_stack
from relax.driver.runner import run_command
from relax.frame_room import call_with_frame_room

pytestmark = pytest.mark.skipif(not hasattr(resource, "RUSAGE_THREAD"), reason="needs per-thread page fault counts (Linux)")

SWINGS = 300
DEPTH = 400  # small frames, about 40 KB of them: across two chunk ends or more


def _down(depth):
    return 0 if depth == 0 else _down(depth - 1) + 1


def swing_faults() -> int:
    """Minor page faults of this thread while a recursion goes DEPTH down and back, SWINGS times."""
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    for _ in range(SWINGS):
        _down(DEPTH)
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before


def on_new_thread(function):
    """function() on a thread of its own: its frames start at the bottom of a fresh frame stack.
    Not call_on_fresh_stack, which now gives its thread frame room: the counts without room
    need a plain thread."""
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(result=function()))
    thread.start()
    thread.join()
    return outcome["result"]


@pytest.fixture(scope="module")
def faults_without_room():
    # Warm-up first: the swing's own first use of memory is not what is counted.
    on_new_thread(swing_faults)
    faults = on_new_thread(swing_faults)
    if faults < SWINGS:
        pytest.skip(f"this Python keeps its frame chunks ({faults} faults in {SWINGS} swings)")
    return faults


def test_frame_room_keeps_the_frames_in_one_chunk(faults_without_room):
    with_room = on_new_thread(lambda: call_with_frame_room(swing_faults))
    assert with_room < SWINGS / 10 < faults_without_room


def test_frame_room_passes_arguments_and_exceptions():
    assert call_with_frame_room(lambda a, b=0: (a, b), 1, b=2) == (1, 2)
    with pytest.raises(KeyError):
        call_with_frame_room({}.__getitem__, "missing")


def test_a_tool_command_runs_with_frame_room(faults_without_room):
    counted = []

    @click.command()
    def tool():
        counted.append(swing_faults())

    assert on_new_thread(lambda: run_command(tool, "tool", argv=[])) == 0
    assert counted[0] < SWINGS / 10 < faults_without_room


def test_the_lowering_thread_runs_with_frame_room(faults_without_room):
    assert call_on_fresh_stack(swing_faults) < SWINGS / 10 < faults_without_room
