"""relax.rpc's Python API on a loopback server: remote runs equal local ones."""

import os
import pathlib
import time

import numpy as np
import pytest

import relax
from relax import rpc
from relax.driver.npy_read import read_npz



SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"


def data(name, kind):
    return str(SAMPLES / "data" / f"{name}.{kind}.npz")


def _inputs(name):
    with open(data(name, "inputs"), "rb") as handle:
        return [array for _, array in read_npz(handle.read(), name)]


def _flat(value):
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in _flat(item)]
    return [np.asarray(value)]


@pytest.mark.parametrize("exec_mode", ["interp", "compiled"])
@pytest.mark.parametrize("name", ["tuples", "control_flow"])
def test_remote_run_equals_local(server, artifact, name, exec_mode):
    path = artifact(name)
    args = _inputs(name)
    local = relax.VirtualMachine(relax.load(path), exec_mode=exec_mode)["main"](*args)
    with rpc.connect("127.0.0.1", server.port, key="secret") as session:
        session.upload(path)
        vm = relax.VirtualMachine(session.load_module(os.path.basename(path)), session.cpu(), exec_mode=exec_mode)
        assert vm.exec_mode == exec_mode
        remote = vm["main"](*args)
    for got, want in zip(_flat(remote), _flat(local), strict=True):
        np.testing.assert_array_equal(got, want)  # the same code on the same host: bit for bit


def test_time_evaluator_stateful_calls_and_reupload(server, artifact):
    path = artifact("tuples")
    args = _inputs("tuples")
    with rpc.connect("127.0.0.1", server.port, key=b"secret") as session:
        session.upload(path)
        session.upload(path, "copy.vmx")  # the same bytes: only the name travels
        vm = relax.VirtualMachine(session.load_module("copy.vmx"), session.cpu(0))
        timing = vm.time_evaluator("main", session.cpu(), number=2, repeat=3)(*args)
        assert len(timing.results) == 3 and all(seconds > 0 for seconds in timing.results)
        vm.set_input("main", *args)
        vm.invoke_stateful("main")
        stateful = vm.get_outputs("main")
        for got, want in zip(_flat(stateful), _flat(vm["main"](*args)), strict=True):
            np.testing.assert_array_equal(got, want)
        with pytest.raises(rpc.RemoteError, match="takes 2 arguments"):
            vm["main"](args[0])  # a failing call is answered; the session goes on
        assert len(_flat(vm["main"](*args))) == 3
    deadline = time.monotonic() + 5  # the log line comes once the session's thread has cleaned up
    while not server.lines and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.lines[-1].endswith(": ok") and "sha256:" in server.lines[-1]


def test_bad_artifact_refused_with_the_loaders_message(server, tmp_path):
    bad = tmp_path / "bad.vmx"
    bad.write_bytes(b"not an artifact at all")
    with pytest.raises(relax.diagnostics.UserError) as local:
        relax.load(str(bad))
    with rpc.connect("127.0.0.1", server.port, key="secret") as session:
        session.upload(str(bad), str(bad))
        with pytest.raises(rpc.RemoteError) as remote:
            session.load_module(str(bad))
    assert str(remote.value) == str(local.value)
