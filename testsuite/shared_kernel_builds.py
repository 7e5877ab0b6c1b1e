"""Kernel objects built once per test session, shared by the pytest-xdist workers.

Many tests build the same kernels: a sample at -O2 in the e2e, vm, runtime and transform
tests, the plain -O0 reference of a schedule test at every CPU level. The library's own
kernel cache (relax.codegen.kernel_cache: keyed by the kernels, the targets, the -O level,
the pass config and the compiler's sources) makes the second build of the same kernels a
read; here it stands behind every library build that names no cache, in a directory that
lives as long as the session and is never the user's.

A test that patches the library (it takes `monkeypatch`) or is marked `fresh_builds` builds
everything itself: a patch could change a kernel without changing its key. A test marked
`shared_builds` patches only the runtime (what runs, not what builds) and shares them.
"""

from __future__ import annotations

import contextlib
import os

from relax.codegen import backends, build_kernels
from relax.codegen.kernel_cache import KernelCache


def session_directory(tmp_path_factory, name: str = "kernel-builds"):
    """A directory `name` of this session's, the same for every xdist worker."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # each worker's basetemp is a folder of the session's
    directory = root / name
    directory.mkdir(exist_ok=True)
    return directory


@contextlib.contextmanager
def sharing(directory):
    """While active, a library build with no cache of its own reads and fills `directory`'s."""
    cache = KernelCache(directory)
    original = build_kernels.start_kernel_object

    def start_kernel_object(mod, targets, cache_=None, context=None):
        return original(mod, targets, cache_ if cache_ is not None else cache, context)

    build_kernels.start_kernel_object = backends.start_kernel_object = start_kernel_object
    try:
        yield
    finally:
        build_kernels.start_kernel_object = backends.start_kernel_object = original
