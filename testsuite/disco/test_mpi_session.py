"""MPISession under the user's own `mpiexec -n N python script.py`: results, and an error that ends the job."""

import subprocess
import sys
import textwrap
import time

import pytest

from conftest import MPIEXEC, PLUGIN, needs_mpiexec

pytestmark = needs_mpiexec

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import relax.disco as disco
    from relax.vm.machine.py_functions import run_plugin

    run_plugin({plugin!r})

    def program(sess):
        n = sess.num_workers
        x = np.arange(6 * n, dtype="float32").reshape(2 * n, 3)
        module = sess.load_vm_module({vmx!r})
        z = module["main"](sess.scatter(x), sess.broadcast(x[:2]))
        total = sess.allreduce(z, "sum")
        gathered = sess.allgather(sess.get_global_func("disco_test.worker_id")())
        expected = sum(x[2 * r:2 * r + 2] + x[:2] for r in range(n))
        assert np.array_equal(total.debug_get_from_remote(n - 1), expected)
        assert gathered.debug_get_from_remote(0).tolist() == [v for r in range(n) for v in (r, n)]
        {fail}
        print("ok", n)

    disco.mpi_main(program)
""")


def _run(tmp_path, add_vmx, workers, fail=""):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT.format(plugin=PLUGIN, vmx=add_vmx, fail=fail))
    started = time.monotonic()
    done = subprocess.run([str(MPIEXEC), "-n", str(workers), sys.executable, str(script)],
                          capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - started


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_mpi_main_runs_the_program_on_rank_0(tmp_path, add_vmx, workers):
    done, _ = _run(tmp_path, add_vmx, workers)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", str(workers)]


def test_an_error_on_a_rank_aborts_the_job(tmp_path, add_vmx):
    done, seconds = _run(tmp_path, add_vmx, 2, fail='sess.get_global_func("disco_test.fail_on")(1)')
    assert done.returncode != 0
    assert "worker 1: ValueError: deliberate failure on 1" in done.stderr
    assert seconds < 30
