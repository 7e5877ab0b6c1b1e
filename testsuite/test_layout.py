"""The test tree itself: pytest imports test modules by basename (prepend mode, so
helper modules beside the tests import plainly), so two test files may not share a
name anywhere under testsuite/."""

import collections
import pathlib

TESTSUITE = pathlib.Path(__file__).resolve().parent


def test_python_module_basenames_are_unique():
    names = collections.defaultdict(list)
    for path in TESTSUITE.rglob("*.py"):
        if "Output" in path.parts or path.name == "conftest.py":
            continue
        names[path.name].append(str(path.relative_to(TESTSUITE)))
    duplicates = {name: paths for name, paths in names.items() if len(paths) > 1}
    assert not duplicates, f"rename one of each: {duplicates}"
