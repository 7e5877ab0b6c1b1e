"""relaxas: the assembler and disassembler of VM bytecode (no logic here: relax.driver.bytecode)."""

from __future__ import annotations

import click

from relax.driver import options
from relax.driver.runner import run_command

EPILOG = """\b
Examples:
  relaxas --dump text model.vmo           print the bytecode listing
  relaxas --dump stats model.vmx          constant pool and function table
  relaxas --dump python model.vmo         an ExecBuilder program that rebuilds it
  relaxas model.vmasm -o model.vmo        assemble a listing
  relaxas --dump text a.vmo | relaxas - -o b.vmo && cmp a.vmo b.vmo
"""


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.argument("source", metavar="FILE")
@click.option(
    "--dump", type=click.Choice(["text", "python", "stats"]), default=None,
    help="Print FILE (.vmo, .vmx or a listing) as a listing, an ExecBuilder program or statistics.",
)
@options.func_option
@options.output_file_option
@options.common_options("relaxas")
def command(source, dump, func, output, traceback, error_limit, color, verbose):
    """Assemble a bytecode listing (.vmasm) into a .vmo, or dump an executable."""
    from relax.driver.bytecode import AssembleOptions, relaxas_main

    return relaxas_main(AssembleOptions(source=source, dump=dump, func=func, output=output, verbose=verbose))


def main(argv=None) -> int:
    return run_command(command, "relaxas", argv)
