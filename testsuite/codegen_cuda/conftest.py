"""Fixtures of the CUDA code generation tests."""

import pytest

from nvrtc_compile_cache import share_compiles


@pytest.fixture(scope="session", autouse=True)
def nvrtc_compiles_shared(tmp_path_factory):
    yield from share_compiles(tmp_path_factory)
