"""Fixtures of the CUDA runtime tests."""

import pathlib
import sys

import pytest

# The compile cache is codegen_cuda's: the samples compiled there compile here again.
CODEGEN_CUDA = str(pathlib.Path(__file__).resolve().parent.parent / "codegen_cuda")
if CODEGEN_CUDA not in sys.path:
    sys.path.insert(0, CODEGEN_CUDA)

from nvrtc_compile_cache import share_compiles  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def nvrtc_compiles_shared(tmp_path_factory):
    yield from share_compiles(tmp_path_factory)
