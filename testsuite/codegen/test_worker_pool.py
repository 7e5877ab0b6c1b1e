"""The part compiler's worker threads (codegen/worker_pool.py): results and errors handed
back, threads started only as calls need them, closing cancels what has not started and
waits for what has, and a pool left open is closed at the interpreter's exit."""

import os
import pathlib
import subprocess
import sys
import threading

import pytest

from relax.codegen.worker_pool import CancelledCall, WorkerPool

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_results_and_errors_come_back():
    pool = WorkerPool(2, "test-pool")
    try:
        values = [pool.submit(pow, 2, n) for n in range(6)]
        failed = pool.submit(int, "not a number")
        assert [call.result() for call in values] == [1, 2, 4, 8, 16, 32]
        with pytest.raises(ValueError, match="not a number"):
            failed.result()
    finally:
        pool.close()


def test_threads_start_as_calls_need_them_up_to_the_limit():
    pool = WorkerPool(3, "test-pool")
    release = threading.Event()
    try:
        assert pool.submit(len, "ab").result() == 2
        assert [t.name for t in pool._threads] == ["test-pool_0"]  # the idle worker takes the next call
        assert pool.submit(len, "abc").result() == 3
        assert len(pool._threads) == 1
        blocked = [pool.submit(release.wait) for _ in range(5)]
        assert [t.name for t in pool._threads] == ["test-pool_0", "test-pool_1", "test-pool_2"]
        release.set()
        assert all(call.result() for call in blocked)
    finally:
        release.set()
        pool.close()


def test_the_start_context_wraps_each_thread_start():
    entered = []

    class Recording:
        def __enter__(self):
            entered.append(threading.current_thread().name)

        def __exit__(self, *exc):
            return False

    pool = WorkerPool(1, "test-pool", Recording)
    pool.submit(len, "a").result()
    pool.close()
    assert entered == [threading.current_thread().name]


def test_close_cancels_what_has_not_started_and_waits_for_what_has():
    pool = WorkerPool(1, "test-pool")
    started, release = threading.Event(), threading.Event()
    finished = []

    def running():
        started.set()
        release.wait()
        finished.append(True)
        return "done"

    first = pool.submit(running)
    queued = pool.submit(len, "never run")
    started.wait()
    closer = threading.Thread(target=pool.close)
    closer.start()
    release.set()
    closer.join()
    assert finished == [True] and first.result() == "done"
    with pytest.raises(CancelledCall):
        queued.result()
    assert not any(thread.is_alive() for thread in pool._threads)
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(len, "late")
    pool.close()  # a second close does nothing


def test_a_pool_left_open_is_closed_at_exit(tmp_path):
    """The running call finishes before the process ends, though nobody waits for it."""
    marker = tmp_path / "finished"
    program = f"""
import threading, time
from relax.codegen.worker_pool import WorkerPool
pool = WorkerPool(1, "left-open")
started = threading.Event()
def slow():
    started.set()
    time.sleep(0.3)
    open({str(marker)!r}, "w").write("yes")
pool.submit(slow)
started.wait()
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "lib"), str(ROOT)])}
    subprocess.run([sys.executable, "-c", program], check=True, env=env, timeout=60)
    assert marker.read_text() == "yes"
