"""Differential tests: random well-typed programs (program_gen.py) built under several
configurations must agree with each other and with numpy (differential_oracles.py).

Examples are derandomized, so `make test` runs the same programs every time; `make
fuzz` runs fresh ones for as long as asked. A failure prints the program's text, the
configurations that disagree and where.
"""

from __future__ import annotations

import pathlib
import re
import tempfile

import pytest
from hypothesis import HealthCheck, Phase, given, note, seed, settings

import differential_oracles as oracles
from program_gen import programs

# An example builds three times and runs five VMs (0.3 to 0.5 s on this project's
# 2-core machine), a staged one runs five tool commands: these counts keep the file
# under a minute even while other jobs share the machine (the suite has 8 minutes on
# 2 cores); `make fuzz-differential SECONDS=N` runs as many as asked.
CONFIGURATION_EXAMPLES = 60
CONFIGURATION_SHARDS = 4
STAGED_EXAMPLES = 12

# No shrinking: a failure prints its program at once instead of rebuilding hundreds of
# smaller ones for minutes (`make fuzz` shrinks what it finds).
settings.register_profile(
    "differential", deadline=None, derandomize=True, database=None, print_blob=False,
    phases=(Phase.explicit, Phase.generate), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = settings.get_profile("differential")

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")


def _annotations(text: str) -> dict[str, str]:
    """Each binding's struct info annotation in TVMScript text, by variable name."""
    return dict(re.findall(r"^\s*(lv\d+): (R\.Tensor\(.*?\)) = ", text, re.MULTILINE))


@settings(PROFILE, max_examples=200)
@given(programs())
def test_generated_programs_are_well_typed(program):
    """Every generated program is valid TVMScript, and the struct info relax infers for
    each binding is the generator's (so annotated programs do not contradict relax)."""
    from relax.driver.compile import check_module
    from relax.script import parse, script
    from relax.transform.normalize import Normalize

    note(program.source)
    check_module(parse(program.source, "program.relax"))
    unannotated = parse(program.render(annotated=False), "program.relax")
    inferred = _annotations(script(Normalize().run(unannotated)))
    assert inferred == {n.value.name: n.value.type_text for n in program.nodes}


def _configurations_agree(shard: int):
    """One shard of the configuration check: its own seed, so that the shards draw different
    programs and pytest-xdist can run them side by side."""

    @seed(shard)
    @settings(PROFILE, derandomize=False, max_examples=CONFIGURATION_EXAMPLES // CONFIGURATION_SHARDS)
    @given(programs())
    def test(program):
        """-O0 vs -O2, interp vs compiled exec mode, host CPU vs baseline x86-64, each vs numpy."""
        note(program.source)
        oracles.check_program(program)

    test.__name__ = f"test_configurations_agree_with_each_other_and_numpy_{shard}"
    return test


for _shard in range(CONFIGURATION_SHARDS):
    globals()[f"test_configurations_agree_with_each_other_and_numpy_{_shard}"] = _configurations_agree(_shard)


@settings(PROFILE, max_examples=STAGED_EXAMPLES)
@given(programs())
def test_staged_build_matches_one_shot(program):
    """relaxc -S | relaxas, relaxc --emit kernels, relaxld: the same bytes and results as relaxc -o."""
    note(program.source)
    with tempfile.TemporaryDirectory() as directory:
        oracles.check_staged(program, pathlib.Path(directory))
