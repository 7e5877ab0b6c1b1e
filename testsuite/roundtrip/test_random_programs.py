"""print -> parse round trip of random Relax programs (issue 2)."""

from hypothesis import HealthCheck, given, settings

from relax.ir.structural import assert_structural_equal
from relax.script import parse, script

from random_programs import modules


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_print_parse_round_trip(mod):
    text = script(mod)
    reparsed = parse(text, "random.relax")
    assert_structural_equal(reparsed, mod)
    assert script(reparsed) == text
