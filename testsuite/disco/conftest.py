"""Fixtures of the Disco tests: a tiny artifact, the test plugin, sessions shared by a module."""

import os
import pathlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent
PLUGIN = str(HERE / "disco_plugin.py")
MPIEXEC = pathlib.Path(__file__).resolve().parents[2] / ".venv" / "bin" / "mpiexec"

ADD = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32"), y: R.Tensor(("n", 3), dtype="float32")):
        z = R.add(x, y)
        return z
"""

needs_mpiexec = pytest.mark.skipif(not os.access(MPIEXEC, os.X_OK), reason=f"no mpiexec at {MPIEXEC}")


@pytest.fixture(scope="session")
def add_vmx(tmp_path_factory):
    """A .vmx of main(x, y) = x + y on (n, 3) float32 tensors."""
    from relax.build import build
    from relax.script import parse

    path = tmp_path_factory.mktemp("disco") / "add.vmx"
    build(parse(ADD, "add.relax")).export(str(path))
    return str(path)


def make_session(kind: str, workers: int, **options):
    """A session of `kind` ("threads" or "processes") whose workers know the test plugin's functions."""
    import relax.disco as disco
    from relax.vm.machine.py_functions import run_plugin

    if kind == "threads":
        run_plugin(PLUGIN)
        return disco.ThreadedSession(workers, **options)
    return disco.ProcessSession(workers, plugins=[PLUGIN], mpiexec=str(MPIEXEC), **options)


@pytest.fixture(scope="module")
def sessions():
    """get(kind, workers): one session per (kind, workers) for the whole module, shut down at its end."""
    made = {}

    def get(kind, workers):
        if kind == "processes" and not os.access(MPIEXEC, os.X_OK):
            pytest.skip(f"no mpiexec at {MPIEXEC}")
        if (kind, workers) not in made:
            made[kind, workers] = make_session(kind, workers)
        return made[kind, workers]

    yield get
    for session in made.values():
        session.shutdown()
