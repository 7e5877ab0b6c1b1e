"""The tracker lends each client one free server of a device key and takes it back."""

import selectors
import subprocess
import sys
import threading
import time

import pytest

from relax import rpc
from relax.diagnostics import UserError
from relax.rpc.tracker_client import Registration, _ask
from relaxrun.cli import main

WAIT = 10.0  # seconds any one expected change may take before the test fails


def _until(condition, what):
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def pool(tmp_path):
    """A tracker and two servers registered as 'board', all with the key b"secret"."""
    lines = []
    tracker = rpc.Tracker(rpc.TrackerConfig(port=0, key=b"secret", log=lines.append)).start()
    servers, registrations = [], []
    for _ in range(2):
        config = rpc.ServerConfig(port=0, key=b"secret", workdir=str(tmp_path), idle_timeout=5.0, log=lines.append)
        server = rpc.Server(config).start()
        registration = Registration(("127.0.0.1", tracker.port), "board", "127.0.0.1", server.port, b"secret",
                                    lines.append)
        registration.register()
        servers.append(server)
        registrations.append(registration)
    tracker.lines = lines
    tracker.server_ports = {server.port for server in servers}
    yield tracker
    for registration, server in zip(registrations, servers):
        registration.stop()
        server.stop()
    tracker.stop()


def _board(tracker):
    with rpc.connect_tracker("127.0.0.1", tracker.port, key="secret") as client:
        [group] = client.status()
    return group


def test_two_servers_four_clients(pool):
    holding, served, errors = [], [], []
    release = [threading.Event() for _ in range(4)]

    def client(index):
        try:
            with rpc.connect_tracker("127.0.0.1", pool.port, key="secret").request("board", timeout=WAIT) as session:
                session.request({"op": "has", "sha256": "0" * 64})  # the session works
                port = int(session.address.rsplit(":", 1)[1])
                holding.append(index)
                served.append(port)
                release[index].wait(WAIT)
                holding.remove(index)
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=client, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    _until(lambda: len(holding) == 2 and _board(pool)["waiting"] == 2, "two clients served, two waiting")
    first = list(holding)
    assert sorted(served) == sorted(pool.server_ports)  # one client per server
    assert all(server["client"] for server in _board(pool)["servers"])
    with pytest.raises(UserError, match="no server with device key 'board' became free in 0.2 s"):
        rpc.connect_tracker("127.0.0.1", pool.port, key="secret").request("board", timeout=0.2)
    for index in first:
        release[index].set()
    _until(lambda: len(served) == 4, "the waiting clients to get the released servers")
    for event in release:
        event.set()
    for thread in threads:
        thread.join(WAIT)
    assert not errors, errors
    board = _board(pool)
    assert board["waiting"] == 0 and not any(server["client"] for server in board["servers"])


CLIENT = """\
import sys, time
from relax import rpc
session = rpc.connect_tracker("127.0.0.1", int(sys.argv[1]), key="secret").request("board")
print("got", session.address, flush=True)
time.sleep(60)
"""


def test_a_client_that_disappears_releases_its_server(pool):
    process = subprocess.Popen([sys.executable, "-c", CLIENT, str(pool.port)], stdout=subprocess.PIPE, text=True)
    try:
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        assert selector.select(timeout=30), "the client got no server in 30 s"
        assert process.stdout.readline().startswith("got 127.0.0.1:")
        assert sum(1 for server in _board(pool)["servers"] if server["client"]) == 1
    finally:
        process.kill()  # no release, no bye: its connections just end
        process.wait(timeout=10)
        process.stdout.close()
    _until(lambda: not any(server["client"] for server in _board(pool)["servers"]), "the server to come back")
    assert any("gave back server" in line for line in pool.lines)


def test_tracker_status_and_remote_through_the_tracker(pool, artifact, tmp_path, capsys):
    key = tmp_path / "key"
    key.write_text("secret\n")
    assert main(["--tracker-status", f"127.0.0.1:{pool.port}", "--key-file", str(key)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "board: 2 servers, 2 free, 0 waiting"
    assert sorted(line.split()[0] for line in out[1:]) == sorted(f"127.0.0.1:{port}" for port in pool.server_ports)
    assert all(line.endswith("  free") for line in out[1:])
    args = ["--remote", f"tracker://127.0.0.1:{pool.port}/board", "--key-file", str(key), artifact("tuples"),
            "--input", "3x4xf32=1", "--input", "3x4xf32=2", "--json"]
    assert main(args) == 0
    assert '"results"' in capsys.readouterr().out
    assert any("gave back server" in line for line in pool.lines)
    assert main(args[:1] + [f"tracker://127.0.0.1:{pool.port}/phone"] + args[2:]) == 1
    assert "no server is registered with device key 'phone' (registered: board)" in capsys.readouterr().err
    assert main(args[:1] + [f"tracker://127.0.0.1:{pool.port}"] + args[2:]) == 1
    assert "expected tracker://HOST:PORT/DEVICE-KEY" in capsys.readouterr().err


def test_wrong_key_refused_at_the_tracker(pool):
    with pytest.raises(UserError, match="the tracker 127.0.0.1:.* refused: authentication failed: wrong key"):
        rpc.connect_tracker("127.0.0.1", pool.port, key="wrong")
    with pytest.raises(UserError, match="needs a key"):
        Registration(("127.0.0.1", pool.port), "board", "127.0.0.1", 1, None, pool.lines.append).register()
    assert len(_board(pool)["servers"]) == 2
    with rpc.connect_tracker("127.0.0.1", pool.port, key="secret") as client:
        with pytest.raises(UserError, match="unknown tracker request 'format_disk'"):
            _ask(client.socket, {"op": "format_disk"}, "the tracker")
    assert any("unknown tracker request" in line for line in pool.lines)


def _started(arguments, first_line):
    """A relaxrun process and the port its first stderr line names."""
    process = subprocess.Popen([sys.executable, "-m", "relaxrun", *arguments], stderr=subprocess.PIPE, text=True)
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    if not selector.select(timeout=30):
        process.kill()
        pytest.fail(f"relaxrun {arguments[0]} printed nothing in 30 s")
    line = process.stderr.readline()
    assert line.startswith(first_line), line
    return process, int(line.split(":")[2].split()[0])


def test_tracker_and_server_processes(tmp_path, capsys):
    key = tmp_path / "key"
    key.write_text("secret\n")
    tracker, port = _started(["--tracker-serve", "127.0.0.1:0", "--key-file", str(key)], "relaxrun: tracker on ")
    server = None
    try:
        server, _ = _started(["--serve", "127.0.0.1:0", "--key-file", str(key), "--tracker", f"127.0.0.1:{port}",
                              "--device-key", "rpi4"], "relaxrun: serving on ")
        with rpc.connect_tracker("127.0.0.1", port, key="secret") as client:
            _until(client.status, "the server to register (after its first line)")
            assert [group["device_key"] for group in client.status()] == ["rpi4"]
            server.terminate()
            assert server.wait(timeout=10) == 0
            _until(lambda: not client.status(), "the stopped server to leave the pool")
        assert main(["--tracker-status", f"127.0.0.1:{port}", "--key-file", str(key)]) == 0
        assert capsys.readouterr().out == "no server registered\n"
        tracker.terminate()
        assert tracker.wait(timeout=10) == 0
    finally:
        for process in (tracker, server):
            if process is not None:
                process.kill()
                process.wait(timeout=10)
                process.stderr.close()
    assert main(["--serve", "127.0.0.1:0", "--tracker", f"127.0.0.1:{port}"]) == 1
    assert "--tracker and --device-key go together" in capsys.readouterr().err
    assert main(["--serve", "127.0.0.1:0", "--tracker", f"127.0.0.1:{port}", "--device-key", "rpi4"]) == 1
    assert f"cannot connect to the tracker 127.0.0.1:{port}" in capsys.readouterr().err
