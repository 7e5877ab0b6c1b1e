"""The IR services over every real program: corpus files, samples and benchmarks.

Each file is parsed; a file the parser does not accept (yet) is skipped, with the
parser's message, since reading it is the parser's test.
"""

import pathlib

import pytest

from relax import script
from relax.diagnostics import DiagnosticError
from relax.ir import check_well_formed, from_json, structural_equal, structural_hash, to_json
from relax.ir.structural import assert_structural_equal

REPO = pathlib.Path(__file__).resolve().parents[2]
FILES = sorted(
    list((REPO / "testsuite" / "corpus").glob("*.tvmscript"))
    + list((REPO / "samples").glob("*.relax"))
    + list((REPO.parent / "shared" / "bench").glob("*.relax"))
)


def _parse(path: pathlib.Path):
    try:
        return script.parse(path.read_text(), str(path))
    except DiagnosticError as error:
        pytest.skip(f"the parser does not read {path.name}: {error}")


@pytest.fixture(params=FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def module(request):
    return _parse(request.param)


def test_there_are_files_to_check():
    assert len(FILES) > 20


def test_json_round_trip(module):
    text = to_json(module)
    loaded = from_json(text)
    assert_structural_equal(module, loaded)
    assert to_json(loaded) == text


def test_well_formed(module):
    assert [f"{d.span}: {d.message}" for d in check_well_formed(module)] == []


def test_parsing_twice_gives_equal_modules_with_equal_hashes(request, module):
    again = _parse(pathlib.Path(request.node.callspec.params["module"]))
    assert structural_equal(module, again)
    assert structural_hash(module) == structural_hash(again)
