"""Fixtures of the end-to-end tests."""

import importlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def bench_script(monkeypatch):
    """Imports a script of bench/ as a module by name (`bench_script("compile")`), bench/ on
    the path for the test, as the scripts import each other."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    return importlib.import_module
