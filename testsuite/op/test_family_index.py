"""The operator families load on demand (op/registry.py, op/family_index.py): the index
names, for every operator, a family whose import registers it, and looking an operator
up imports its family only."""

import pathlib
import subprocess
import sys

import pytest

from relax.op import registry


def test_the_index_is_up_to_date():
    script = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "op_family_index.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _in_fresh_interpreter(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return result.stdout.split()


def test_a_lookup_loads_the_family_of_its_operator_only():
    loaded = _in_fresh_interpreter("""
import sys
from relax.op import registry
assert registry.get("relax.matmul").name == "relax.matmul"
assert registry.get("relax.add").name == "relax.add"
print(*sorted(m.rsplit(".", 1)[1] for m in sys.modules
              if m.rsplit(".", 1)[-1] in registry.FAMILY_MODULES and m.startswith("relax.op.")))
""")
    assert "linear_algebra" in loaded and "binary" in loaded
    assert "vision_detection" not in loaded and "nn_conv" not in loaded
    assert len(loaded) < len(registry.FAMILY_MODULES)


@pytest.mark.parametrize("name", ["relax.no_such_op", "relax.nn.conv2d"])
def test_unknown_names_and_whole_listings_still_see_every_family(name):
    out = _in_fresh_interpreter(f"""
from relax.op import registry
registry.get({name!r})
print(registry.suggest("relax.nn.conv2dd"), len(registry.all_ops()))
""")
    assert out[0] == "relax.nn.conv2d"
    assert int(out[1]) == len(registry.all_ops())
