"""Fixtures of the relax.rpc tests: sample artifacts built once, servers in threads on loopback."""

import pathlib

import pytest

from relax.rpc import Server, ServerConfig

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture(scope="session")
def artifact(tmp_path_factory):
    """The path of samples/NAME.relax built into a .vmx (once per test session)."""
    from relax.build import build
    from relax.script import parse

    folder = tmp_path_factory.mktemp("rpc-artifacts")
    cache = {}

    def get(name):
        if name not in cache:
            path = folder / f"{name}.vmx"
            build(parse((SAMPLES / f"{name}.relax").read_text(), f"samples/{name}.relax")).export(str(path))
            cache[name] = str(path)
        return cache[name]

    return get


@pytest.fixture
def server(tmp_path):
    """A server on 127.0.0.1 (any free port) with the key b"secret", its log lines in `.lines`."""
    lines = []
    workdir = tmp_path / "server-workdir"
    workdir.mkdir()
    config = ServerConfig(port=0, key=b"secret", workdir=str(workdir), idle_timeout=5.0, log=lines.append)
    with Server(config) as running:
        running.lines = lines
        yield running
    assert not list(workdir.iterdir()), "the server left its folder behind"

