"""Disco failures: a worker's error names its rank, mismatched shapes are refused, a killed worker ends the session."""

import os
import time

import numpy as np
import pytest

from conftest import make_session, needs_mpiexec
from relax.diagnostics import UserError

KINDS = [("threads", 2), ("processes", 2), ("threads", 3)]


@pytest.fixture(params=KINDS, ids=[f"{k}-{n}" for k, n in KINDS])
def session(request, sessions):
    return sessions(*request.param)


def test_worker_error_names_its_rank_and_session_goes_on(session):
    with pytest.raises(UserError, match="worker 1: ValueError: deliberate failure on 1"):
        session.get_global_func("disco_test.fail_on")(1)
    np.testing.assert_array_equal(session.allreduce(session.broadcast(np.ones(2))).debug_get_from_remote(1),
                                  [session.num_workers] * 2)


@pytest.mark.parametrize("collective", ["allreduce", "allgather"])
def test_mismatched_shapes_are_refused(session, collective):
    rows = session.get_global_func("disco_test.rows")("float32")
    with pytest.raises(UserError, match=r"worker 0: .*worker 0 has shape \(1, 2\) float32 but worker 1 has shape "
                                        r"\(2, 2\) float32"):
        getattr(session, collective)(rows)
    session.sync_worker_0()  # every worker found it: the session is still usable


def test_unknown_function_and_reduction(session):
    with pytest.raises(UserError, match="worker 0: global function 'no.such' is not registered"):
        session.get_global_func("no.such")
    with pytest.raises(UserError, match="unknown reduction 'mean'"):
        session.allreduce(session.broadcast(np.ones(2)), "mean")


def test_threads_error_before_a_collective_releases_the_peers(sessions):
    session = sessions("threads", 3)
    with pytest.raises(UserError, match="worker 2: ValueError: failed before the collective"):
        session.get_global_func("disco_test.fail_or_reduce")(2)
    np.testing.assert_array_equal(session.allreduce(session.broadcast(np.ones(2))).debug_get_from_remote(0), [3, 3])


def _gone(process) -> bool:
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return True
    return False


@needs_mpiexec
def test_processes_error_before_a_collective_ends_the_session():
    session = make_session("processes", 2, error_grace=0.5)
    started = time.monotonic()
    with pytest.raises(UserError, match=r"worker 1: ValueError: failed before the collective \(workers 0 did not"):
        session.get_global_func("disco_test.fail_or_reduce")(1)
    assert time.monotonic() - started < 10
    assert _gone(session._process), "mpiexec's process group outlived the session"
    with pytest.raises(UserError, match="shut down"):
        session.broadcast(np.ones(1))


@needs_mpiexec
def test_killed_worker_is_detected_within_seconds():
    session = make_session("processes", 2)
    started = time.monotonic()
    # mpiexec ends worker 0 when worker 1 dies: on a loaded machine before it answers, so both are named.
    with pytest.raises(UserError, match=r"workers? (0, )?1 died during 'call'"):
        session.get_global_func("disco_test.kill_on")(1)
    assert time.monotonic() - started < 10
    assert _gone(session._process), "mpiexec's process group outlived the session"
    session.shutdown()


@needs_mpiexec
def test_missing_mpiexec_and_bad_start(tmp_path):
    from relax.disco import ProcessSession

    with pytest.raises(UserError, match="could not start its 2 workers: mpiexec exited with status"):
        ProcessSession(2, mpiexec="/bin/false", start_timeout=10)



@pytest.mark.parametrize("euid, consents", [(0, True), (1000, False)])
def test_root_gives_open_mpi_its_consent(tmp_path, monkeypatch, euid, consents):
    """Open MPI's mpiexec refuses to run as root unless two variables say so (seen on a GPU
    machine whose commands run as root): the session's own local ranks get them as root only."""
    from relax.disco import ProcessSession

    seen = tmp_path / "env"
    fake = tmp_path / "mpiexec"
    fake.write_text(f"#!/bin/sh\nenv > {seen}\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.delenv("OMPI_ALLOW_RUN_AS_ROOT", raising=False)
    monkeypatch.delenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", raising=False)
    monkeypatch.setattr("os.geteuid", lambda: euid)
    with pytest.raises(UserError, match="mpiexec exited with status 1"):
        ProcessSession(1, mpiexec=str(fake), start_timeout=10)
    variables = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert ("OMPI_ALLOW_RUN_AS_ROOT" in variables) is consents
    assert ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM" in variables) is consents
    assert "RELAX_DISCO_AUTHKEY" in variables
