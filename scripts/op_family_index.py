"""Writes lib/relax/op/family_index.py: which family module registers each operator.

    python scripts/op_family_index.py           rewrite the index
    python scripts/op_family_index.py --check   exit status 1 when it is out of date

Imports the family modules in registry.FAMILY_MODULES order in a fresh interpreter and
gives each operator the family whose import registered it first: loading that family
alone registers the operator, whatever it imports along the way.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
INDEX = ROOT / "lib" / "relax" / "op" / "family_index.py"

_PROBE = """
import importlib, json
from relax.op import registry
families = {}
for family in registry.FAMILY_MODULES:
    before = set(registry.REGISTRY)
    importlib.import_module("relax.op." + family)
    families[family] = sorted(set(registry.REGISTRY) - before)
print(json.dumps(families))
"""

_HEADER = '''"""Which family module registers each operator, so that registry.get imports only the
families a build looks up. Written by `python scripts/op_family_index.py` (which imports
the families in order, each operator under the first whose import registers it);
testsuite/op/test_family_index.py checks it. An operator missing here still loads:
registry.get then imports every family."""

FAMILY_OPS = {
'''


def registered_families() -> dict[str, list[str]]:
    """{family module: the operators its import registers}, from a fresh interpreter."""
    environment = dict(os.environ, PYTHONPATH=str(ROOT / "lib"))
    result = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True,
                            env=environment)
    return json.loads(result.stdout)


def index_text(families: dict[str, list[str]]) -> str:
    lines = [_HEADER]
    for family, names in families.items():
        if not names:
            continue
        lines.append(f'    "{family}": (\n')
        row = "       "
        for name in names:
            item = f' "{name}",'
            if len(row) + len(item) > 100:
                lines.append(row + "\n")
                row = "       "
            row += item
        lines.append(row + "\n    ),\n")
    lines.append("}\n\nFAMILY_OF = {name: family for family, names in FAMILY_OPS.items() for name in names}\n")
    return "".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the index is up to date")
    args = parser.parse_args(argv)
    text = index_text(registered_families())
    if args.check:
        if INDEX.read_text() != text:
            print(f"{INDEX.relative_to(ROOT)} is out of date: run python scripts/op_family_index.py")
            return 1
        return 0
    INDEX.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
