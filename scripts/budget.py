"""The size budget: every module of the library and the tools stays short enough to read in one sitting.

    python scripts/budget.py            check (exit status 1 on a violation)
    python scripts/budget.py --list     also list the longest modules

Reads `[tool.relax-budget]` from pyproject.toml: `paths` (folders searched for `*.py`),
`max-lines`, and `exceptions` (module path = the reason it may be longer). A module over
`max-lines` that is not an exception fails, and so does an exception that no longer
applies (the module is gone or back under the limit), so the list only shrinks.
`make budget` runs this after ruff's complexity check (C901, configured in the same file).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def line_count(path: pathlib.Path) -> int:
    """Lines of `path`, as `wc -l` counts them for a file that ends with a newline."""
    return len(path.read_text(encoding="utf-8").splitlines())


def modules(root: pathlib.Path, paths) -> dict[str, int]:
    """Every Python module under `paths`, by its path relative to `root`: its line count."""
    found = {}
    for folder in paths:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" not in path.parts:
                found[path.relative_to(root).as_posix()] = line_count(path)
    return found


def violations(sizes: dict[str, int], max_lines: int, exceptions: dict[str, str]) -> list[str]:
    """One message per module over budget without an exception, and per stale exception."""
    problems = [f"{path}: {count} lines, over the budget of {max_lines}: split it by responsibility "
                f"(or list it, with a reason, in [tool.relax-budget.exceptions])"
                for path, count in sizes.items() if count > max_lines and path not in exceptions]
    for path in exceptions:
        if path not in sizes:
            problems.append(f"{path}: listed in [tool.relax-budget.exceptions] but not found: remove the entry")
        elif sizes[path] <= max_lines:
            problems.append(f"{path}: {sizes[path]} lines, within the budget: remove its exception")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="also list the ten longest modules")
    args = parser.parse_args(argv)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["relax-budget"]
    max_lines = config["max-lines"]
    exceptions = config.get("exceptions", {})
    sizes = modules(ROOT, config["paths"])
    if args.list:
        for path, count in sorted(sizes.items(), key=lambda item: -item[1])[:10]:
            print(f"{count:6d}  {path}")
    problems = violations(sizes, max_lines, exceptions)
    for problem in problems:
        print(f"budget: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"budget: {len(sizes)} modules, at most {max_lines} lines each ({len(exceptions)} listed exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
