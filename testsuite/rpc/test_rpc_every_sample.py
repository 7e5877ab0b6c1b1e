"""relaxrun --remote runs every artifact sample on a loopback server and gets its expected
outputs (issue 21's done-when); the server registers the samples' host functions, as
`relaxrun --serve --plugin samples/host_functions.py` does."""

import pytest

from relax.rpc import Server, ServerConfig
from relax.vm.machine.py_functions import run_plugin
from relaxrun.cli import main
from sample_names import ARTIFACT_SAMPLES, SAMPLES


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rpc-every-sample")
    key = folder / "key"
    key.write_bytes(b"sesame")
    run_plugin(str(SAMPLES / "host_functions.py"))  # the in-thread server shares this process's registry
    with Server(ServerConfig(port=0, key=b"sesame", workdir=str(folder), idle_timeout=30.0, log=lambda line: None)) as server:
        yield server.port, str(key)


@pytest.mark.parametrize("name", ARTIFACT_SAMPLES)
def test_every_sample_runs_remotely_with_its_expected_outputs(served, artifact, name, capsys):
    port, key = served
    data = SAMPLES / "data"
    code = main(["--remote", f"127.0.0.1:{port}", "--key-file", key, artifact(name),
                 "--input", f"@{data / f'{name}.inputs.npz'}", "--expected-output", f"@{data / f'{name}.expected.npz'}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == "[SUCCESS]\n"
