"""relaxld: the linker of bytecode and kernel objects (no logic here: relax.driver.link)."""

from __future__ import annotations

import click

from relax.driver import options
from relax.driver.runner import run_command

EPILOG = """\b
Examples:
  relaxld model.vmo model.ko -o model.vmx                  link for the kernels' target
  relaxld model.vmo x86.ko arm.ko -o model.vmx             a fat artifact (two targets)
  relaxld model.vmo model.ko --allow-undefined 'samples.*' -o model.vmx
  relaxld -v model.vmo model.ko --target-check -o model.vmx
  relaxas --dump stats model.vmx                           what was linked
"""


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.argument("inputs", metavar="FILE...", nargs=-1, required=True)
@click.option("--allow-undefined", "allow_undefined", metavar="NAME", multiple=True,
              help="A function the user registers at run time (repeatable; glob patterns such as 'samples.*').")
@click.option("--target-check", is_flag=True,
              help="Refuse kernel objects built for a kernel ABI version this runtime does not speak.")
@click.option("--exec-mode", "exec_mode", type=click.Choice(["interp", "compiled"]), default=None,
              help="Record the VM exec mode the artifact asks for (interp: the dispatch loop; compiled: a static "
                   "function as one native call); relaxrun --exec-mode overrides it.")
@options.output_file_option
@options.common_options("relaxld")
def command(inputs, allow_undefined, target_check, exec_mode, output, traceback, error_limit, color, verbose):
    """Link one bytecode object (.vmo) with kernel objects (.ko) into a runnable artifact (.vmx).

    Every function the bytecode calls must be a kernel, a runtime builtin, or allowed
    with --allow-undefined. Output: FILE given with -o (default a.vmx).
    """
    from relax.driver.link import LinkOptions, relaxld_main

    return relaxld_main(LinkOptions(inputs=tuple(inputs), output=output, allow_undefined=tuple(allow_undefined),
                                    target_check=target_check, exec_mode=exec_mode, verbose=verbose))


def main(argv=None) -> int:
    return run_command(command, "relaxld", argv)
