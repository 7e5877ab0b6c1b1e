"""relaxas command line."""

from __future__ import annotations

import click

from relax.driver import options
from relax.driver.runner import run_command


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@options.common_options("relaxas")
def command(traceback, error_limit, color, verbose):
    """relaxas (under construction)."""
    raise click.UsageError("not available yet")


def main(argv=None) -> int:
    return run_command(command, "relaxas", argv)
