"""relaxrun --serve as a real process and relaxrun --remote against it; the server imports no compiler."""

import pathlib
import selectors
import signal
import subprocess
import sys

import pytest

from relax import rpc
from relax.diagnostics import UserError
from relaxrun.cli import main

DATA = pathlib.Path(__file__).resolve().parents[2] / "samples" / "data"
COMPILER = ("ir", "script", "transform", "op", "tir", "codegen", "target", "build", "vm.codegen",
            "vm.artifact.linker", "driver.compile", "driver.artifact", "driver.assemble", "driver.bytecode",
            "driver.link")


def _start_server(tmp_path):
    key = tmp_path / "key"
    key.write_text("sesame\n")
    process = subprocess.Popen([sys.executable, "-m", "relaxrun", "--serve", "127.0.0.1:0", "--key-file", str(key)],
                               stderr=subprocess.PIPE, text=True)
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    if not selector.select(timeout=30):
        process.kill()
        pytest.fail("relaxrun --serve printed nothing in 30 s")
    line = process.stderr.readline()
    assert line.startswith("relaxrun: serving on 127.0.0.1:"), line
    return process, int(line.split(":")[2].split()[0]), str(key)


def test_serve_remote_and_a_killed_server(tmp_path, artifact, capsys):
    process, port, key = _start_server(tmp_path)
    try:
        path = artifact("tuples")
        args = ["--remote", f"127.0.0.1:{port}", "--key-file", key, path, "--input", f"@{DATA / 'tuples.inputs.npz'}",
                "--expected-output", f"@{DATA / 'tuples.expected.npz'}", "--repeat", "2", "--print-time"]
        assert main(args) == 0
        out, err = capsys.readouterr()
        assert out == "[SUCCESS]\n" and "relaxrun: time: main:" in err
        session = rpc.connect("127.0.0.1", port, key="sesame")
        session.upload(path)
        process.kill()  # mid-session
        process.wait(timeout=10)
        with pytest.raises(UserError, match="connection to the server 127.0.0.1:.* lost"):
            session.load_module("tuples.vmx")
        assert main(args) == 1
        assert "cannot connect to 127.0.0.1" in capsys.readouterr().err
    finally:
        process.kill()
        process.wait(timeout=10)


def test_sigterm_stops_cleanly_and_non_loopback_needs_a_key(tmp_path, capsys):
    process, port, _ = _start_server(tmp_path)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 0
    assert "server stopped" in process.stderr.read()
    process.stderr.close()
    assert main(["--serve", "0.0.0.0:0"]) == 1
    assert "refusing to serve on a non-loopback address without --key-file" in capsys.readouterr().err


def test_server_imports_no_compiler(artifact):
    code = (
        "import sys, numpy as np, relax\n"
        "from relax import rpc\n"
        "server = rpc.Server(rpc.ServerConfig(port=0, log=lambda line: None)).start()\n"
        f"path = {artifact('tuples')!r}\n"
        "with rpc.connect('127.0.0.1', server.port) as session:\n"
        "    session.upload(path)\n"
        "    vm = relax.VirtualMachine(session.load_module('tuples.vmx'), session.cpu())\n"
        "    vm['main'](np.ones((3, 4), np.float32), np.ones((3, 4), np.float32))\n"
        "server.stop()\n"
        f"compiler = {COMPILER!r}\n"
        "bad = [m for m in sys.modules if m.startswith('relax.') and any(\n"
        "       m[len('relax.'):] == p or m[len('relax.'):].startswith(p + '.') for p in compiler)]\n"
        "assert not bad, bad\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
