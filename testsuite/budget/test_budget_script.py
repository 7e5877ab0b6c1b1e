"""scripts/budget.py (make budget): modules over the line budget fail unless listed, and a
listed exception that no longer applies fails too."""

import pathlib
import sys

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))

import budget  # noqa: E402


def test_module_over_the_budget_fails_unless_listed():
    sizes = {"lib/a.py": 401, "lib/b.py": 400}
    assert [p.split(":")[0] for p in budget.violations(sizes, 400, {})] == ["lib/a.py"]
    assert budget.violations(sizes, 400, {"lib/a.py": "a reason"}) == []


def test_stale_exceptions_fail():
    problems = budget.violations({"lib/b.py": 12}, 400, {"lib/b.py": "was long", "lib/gone.py": "moved"})
    assert len(problems) == 2
    assert "within the budget" in problems[0] and "not found" in problems[1]


def test_line_count_is_wc_l(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("a = 1\n\nb = 2\n")
    assert budget.line_count(path) == 3
