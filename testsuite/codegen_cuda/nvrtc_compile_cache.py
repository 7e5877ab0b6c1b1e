"""One NVRTC compile per distinct kernel source in a test session, shared by the pytest-xdist workers.

The CUDA tests compile some kernels more than once: a sample's kernels in codegen_cuda
(build_cuda_kernel_object) and again in runtime_cuda (relax.build). NVRTC's output is a function
of the source, the arch and the options, so the results of each compile are kept in the session's
temporary directory and a later compile of the same source, arch and options reads them. Every
call still goes through nvrtc's own checks first (a missing cupy is still an error), a failed
compile is never kept, and the directory lives only as long as the session.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile

import pytest
from shared_kernel_builds import session_directory


def share_compiles(tmp_path_factory):
    """Makes nvrtc compile each distinct (source, arch, results) once per session; yields (a fixture body)."""
    from relax.codegen.cuda import nvrtc

    if getattr(nvrtc._compiled, "shares_compiles", False):  # the other conftest got here first
        yield
        return
    directory, compile_program = session_directory(tmp_path_factory, "nvrtc-compiles"), nvrtc._compiled

    def compiled(source: str, arch_option: str, what: str, results: tuple):
        key = hashlib.sha256("\0".join((source, arch_option, *results, *nvrtc.OPTIONS)).encode()).hexdigest()
        path = directory / f"{key}.pickle"
        try:
            return pickle.loads(path.read_bytes())
        except (OSError, EOFError, pickle.UnpicklingError):
            pass  # not compiled yet in this session
        outputs = compile_program(source, arch_option, what, results)
        handle, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(handle, "wb") as stream:
            pickle.dump(outputs, stream)
        os.replace(temporary, path)  # a worker reading it meanwhile sees all of it or nothing
        return outputs

    compiled.shares_compiles = True
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nvrtc, "_compiled", compiled)
        yield
