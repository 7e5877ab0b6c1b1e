"""pytest configuration shared by the unit tests under testsuite/."""

import os
import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = REPO_ROOT / "samples"
SHARED_BENCH = REPO_ROOT.parent / "shared" / "bench"


@pytest.fixture
def samples_dir() -> pathlib.Path:
    return SAMPLES
