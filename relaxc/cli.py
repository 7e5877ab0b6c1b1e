"""relaxc: TVMScript in, lowered IR, kernel objects or a runnable artifact out."""

from __future__ import annotations

import click

from relax.driver import options
from relax.driver.runner import run_command

EPILOG = """\b
Examples:
  relaxc --emit ir model.relax            print the parsed module
  relaxc --emit json model.relax -o m.json
  cat model.relax | relaxc --emit ir -
"""


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.argument("source", metavar="FILE")
@click.option(
    "--emit", type=click.Choice(["ir", "json"]), default="ir", show_default=True,
    help="What to produce: ir (TVMScript text), json (the IR as JSON).",
)
@options.output_file_option
@options.common_options("relaxc")
def command(source, emit, output, traceback, error_limit, color, verbose):
    """Compile TVMScript (Relax functions and TIR PrimFuncs)."""
    from relax.driver.compile import CompileOptions, compile_main

    return compile_main(CompileOptions(source=source, emit=emit, output=output, verbose=verbose))


def main(argv=None) -> int:
    return run_command(command, "relaxc", argv)
