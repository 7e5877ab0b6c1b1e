"""Damaged inputs give diagnostics, never an internal error (a Python exception).

Each case takes a Relax input of the project, damages it deterministically (drops a
line, cuts a line short, duplicates a line, swaps a token), and parses it.
"""

from __future__ import annotations

import random
import re

import pytest
from test_parse_inputs import INPUTS

from relax.diagnostics import DiagnosticError
from relax.script import parse

RELAX_INPUTS = [p for p in INPUTS if "@R.function" in p.read_text() and "T.prim_func" not in p.read_text()]
TOKENS = ["R.add", "x", "(", ")", ",", "None", "-1", '"s"', "R.Tensor", "[", "]", "=", "R.const",
          "T.int64()", "cls.f", "R.output(", "R.shape", "1.5", "*", "lambda: 0", "{1: 2}", "ndim=", "if x:"]


def _damage(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    index = rng.randrange(len(lines))
    choice = rng.randrange(4)
    if choice == 0:
        del lines[index]
    elif choice == 1:
        lines[index] = lines[index][: rng.randrange(len(lines[index]) + 1)]
    elif choice == 2:
        lines.insert(index, lines[rng.randrange(len(lines))])
    else:
        spots = [m.span() for m in re.finditer(r"[\w.\"]+|[()\[\],=]", lines[index])]
        if spots:
            start, end = rng.choice(spots)
            lines[index] = lines[index][:start] + rng.choice(TOKENS) + lines[index][end:]
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(8))
def test_damaged_inputs_give_diagnostics(seed):
    rng = random.Random(seed)
    for _ in range(25):
        path = rng.choice(RELAX_INPUTS)
        text = _damage(path.read_text(), rng)
        try:
            parse(text, "damaged.relax")
        except DiagnosticError as error:
            line_count = text.count("\n") + 1
            for diagnostic in error.diagnostics:
                assert diagnostic.message and not diagnostic.message.endswith(".")
                assert diagnostic.span is None or 1 <= diagnostic.span.line <= line_count


def test_shape_of_many_dimensions_is_refused_before_its_dimensions_are_read():
    """A shape literal of 100000s of dimensions ran the compiler into a RecursionError after
    a minute (issue 16); it is refused where the parser meets it, each dimension unread."""
    dims = ", ".join(["1"] * 20000)
    text = ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n"
            "@I.ir_module\nclass Module:\n    @R.function\n"
            f"    def main(x: R.Tensor(({dims}), \"float32\")):\n        return x\n")
    with pytest.raises(DiagnosticError) as caught:
        parse(text, "huge.relax")
    [diagnostic] = caught.value.diagnostics
    assert diagnostic.message.startswith("a shape of 20000 dimensions: tensors have at most 64 dimensions")
    assert (diagnostic.span.line, diagnostic.span.column) == (7, 26)


def test_an_integer_literal_past_pythons_digit_limit_is_located():
    """Python's message named sys.set_int_max_str_digits, at column 1 (issue 16)."""
    text = ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n"
            "@I.ir_module\nclass Module:\n    @R.function\n"
            f"    def main(x: R.Tensor(({'9' * 5000},), \"float32\")):\n        return x\n")
    with pytest.raises(DiagnosticError) as caught:
        parse(text, "digits.relax")
    [diagnostic] = caught.value.diagnostics
    assert diagnostic.message == "an integer literal of 5000 digits; at most 4300 are read"
    assert (diagnostic.span.line, diagnostic.span.column) == (7, 27)
