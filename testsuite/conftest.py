"""pytest configuration shared by the unit tests under testsuite/."""

import os
import pathlib
import sys

import pytest

from cpu_targets import CPU_TARGETS, SCHEDULE_TARGETS

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = REPO_ROOT / "samples"
SHARED_BENCH = REPO_ROOT.parent / "shared" / "bench"

# relaxc caches kernels under ~/.cache by default; tests must neither read a user's cache nor
# fill it. The cache's own tests turn it on explicitly with a directory of their own.
os.environ.setdefault("RELAX_CACHE", "0")


@pytest.fixture(scope="session")
def kernel_builds_directory(tmp_path_factory):
    from shared_kernel_builds import session_directory

    return session_directory(tmp_path_factory)


@pytest.fixture(autouse=True)
def shared_kernel_builds(request, kernel_builds_directory):
    """Library kernel builds shared across the session's tests (shared_kernel_builds.py),
    except in tests that patch the library (unless marked shared_builds) or are marked fresh_builds."""
    patches = "monkeypatch" in request.fixturenames and not request.node.get_closest_marker("shared_builds")
    if patches or request.node.get_closest_marker("fresh_builds"):
        yield
        return
    from shared_kernel_builds import sharing

    with sharing(kernel_builds_directory):
        yield


@pytest.fixture
def samples_dir() -> pathlib.Path:
    return SAMPLES


@pytest.fixture(params=CPU_TARGETS)
def cpu_target(request) -> str:
    """Each CPU level this host runs, and its own CPU (cpu_targets.py): kernel tests take it."""
    return request.param


@pytest.fixture(params=SCHEDULE_TARGETS)
def schedule_target(request) -> str:
    """One target per CPU model the schedules size their tiles by (cpu_targets.py): schedule tests take it."""
    return request.param


def _nvrtc_problem() -> str | None:
    from relax.codegen.cuda import cuda_problem

    return cuda_problem()


def _gpu_problem() -> str | None:
    from relax.runtime.cuda.support import cuda_problem

    return cuda_problem()


def pytest_configure(config):
    """RELAX_TEST_HOST=avx2 (make test-avx2-host): the run must see this host as an AVX2 one,
    or end at once, passing where the host cannot be shown so (testsuite/avx2_host/)."""
    shown = os.environ.get("RELAX_TEST_HOST")
    if not shown:
        return
    from relax import llvm_capi

    llvm_capi.host_cpu_name()  # the start-up file shows the host as LLVM is first asked
    if os.environ.get("RELAX_TEST_HOST_UNCHANGED"):
        pytest.exit(f"RELAX_TEST_HOST={shown}: nothing to run, {os.environ['RELAX_TEST_HOST_UNCHANGED']}", returncode=0)
    if _host_shown() != shown:
        pytest.exit(f"RELAX_TEST_HOST={shown}: this run does not see the host as that; only 'avx2' is known, "
                    "with testsuite/avx2_host on PYTHONPATH (make test-avx2-host)", returncode=4)


def _host_shown() -> str | None:
    """The host kind testsuite/avx2_host/sitecustomize.py shows this process ("avx2"), if it ran."""
    return getattr(sys.modules.get("sitecustomize"), "SHOWN", None)


def pytest_collection_modifyitems(config, items):
    nvrtc_problem = gpu_problem = None
    checked = False
    for item in items:
        wants_gpu = item.get_closest_marker("gpu") is not None
        wants_nvrtc = item.get_closest_marker("nvrtc") is not None
        if not (wants_gpu or wants_nvrtc):
            continue
        if not checked:
            nvrtc_problem, gpu_problem, checked = _nvrtc_problem(), _gpu_problem(), True
        if wants_gpu and gpu_problem:
            item.add_marker(pytest.mark.skip(reason=gpu_problem))
        elif wants_nvrtc and nvrtc_problem:
            item.add_marker(pytest.mark.skip(reason=nvrtc_problem))
