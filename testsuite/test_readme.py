"""The README's command-line reference lists every option each tool's --help shows."""

import pathlib
import re

import pytest

README = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
COMMON = {"--help", "--version", "--traceback", "--error-limit", "--color", "--verbose", "-h", "-v", "-o"}


def _help_options(tool: str) -> set[str]:
    import importlib

    from click.testing import CliRunner

    command = importlib.import_module(f"{tool}.cli").command
    result = CliRunner().invoke(command, ["--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    options_part = result.output.split("Examples:")[0]  # examples may quote other tools
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[A-Za-z])\b", options_part))


@pytest.mark.parametrize("tool", ["relaxc", "relaxas", "relaxld", "relaxrun"])
def test_every_option_is_in_the_readme(tool):
    section = README.split(f"### {tool}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    missing = sorted(o for o in _help_options(tool) - COMMON if o not in section)
    assert not missing, f"README's {tool} section lacks {missing}"
