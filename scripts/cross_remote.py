"""make cross-check's remote step: an aarch64 `relaxrun --serve` under qemu, an x86-64 client.

    ok, status, output = remote_run(guest_relaxrun, guest_env, host_relaxrun, arguments, key_file)

The server is the emulated aarch64 Python running relaxrun --serve on loopback with a key;
the client is the host's relaxrun --remote with the artifact and its inputs and expected
outputs, so the artifact is uploaded, loaded and run by the aarch64 runtime and compared
here. The same function runs with any two relaxrun commands (the tests use the host's
twice), which is why nothing in it knows about qemu.
"""

from __future__ import annotations

import secrets
import selectors
import subprocess
from pathlib import Path

SERVE_TIMEOUT_S = 300  # an emulated Python takes seconds to tens of seconds to start
RUN_TIMEOUT_S = 600


def write_key(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(secrets.token_hex(32) + "\n")
    path.chmod(0o600)
    return path


def remote_run(server: list[str], server_env: dict | None, client: list[str], arguments: list[str], key_file: Path,
               cwd: str | None = None, serve_timeout: float = SERVE_TIMEOUT_S) -> tuple[bool, str, str]:
    """Runs `client --remote` against a fresh `server --serve`; (ok, status, both sides' output)."""
    process = subprocess.Popen(server + ["--serve", "127.0.0.1:0", "--key-file", str(key_file)], env=server_env,
                               cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    client_output = ""
    try:
        port, first_line = _serving_port(process, serve_timeout)
        if port is None:
            return False, "SERVER DID NOT START", first_line + _stop(process)
        command = client + ["--remote", f"127.0.0.1:{port}", "--key-file", str(key_file), *arguments]
        try:
            result = subprocess.run(command, cwd=cwd, text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return False, f"TIMED OUT after {RUN_TIMEOUT_S} s", _stop(process)
        client_output = result.stdout
    except BaseException:
        _stop(process)
        raise
    server_output = _stop(process)
    # relaxrun: 0 success ([SUCCESS]), 3 outputs differ, anything else an error
    ok = result.returncode == 0 and "[SUCCESS]" in client_output
    status = {0: "ok" if ok else "NO COMPARISON", 3: "MISMATCH"}.get(result.returncode,
                                                                      f"FAILED (exit {result.returncode})")
    return ok, status, f"client:\n{client_output}server:\n{first_line}{server_output}"


def _serving_port(process: subprocess.Popen, timeout: float) -> tuple[int | None, str]:
    """The port of the server's first line ("relaxrun: serving on 127.0.0.1:PORT ..."), or None."""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stderr, selectors.EVENT_READ)
        if not selector.select(timeout):
            return None, f"(no line in {timeout:g} s)\n"
    line = process.stderr.readline()
    if not line.startswith("relaxrun: serving on "):
        return None, line
    return int(line.split()[3].rsplit(":", 1)[1]), line


def _stop(process: subprocess.Popen) -> str:
    """Stops the server (SIGTERM, then SIGKILL) and returns what else it printed."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    output = process.stderr.read()
    process.stderr.close()
    return output
