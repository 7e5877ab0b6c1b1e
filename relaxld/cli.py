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
  relaxld --gen-key key.pem                                key.pem (private) and key.pem.pub
  relaxld model.vmo model.ko --sign key.pem -o model.vmx   signed (relaxrun --trust key.pem.pub)
  relaxas --dump stats model.vmx                           what was linked
"""


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.argument("inputs", metavar="FILE...", nargs=-1)
@click.option("--allow-undefined", "allow_undefined", metavar="NAME", multiple=True,
              help="A function the user registers at run time (repeatable; glob patterns such as 'samples.*').")
@click.option("--target-check", is_flag=True,
              help="Refuse kernel objects built for a kernel ABI version this runtime does not speak.")
@click.option("--exec-mode", "exec_mode", type=click.Choice(["interp", "compiled"]), default=None,
              help="Record the VM exec mode the artifact asks for (interp: the dispatch loop; compiled: a static "
                   "function as one native call); relaxrun --exec-mode overrides it.")
@options.sign_option
@click.option("--gen-key", "gen_key", metavar="KEY", default=None,
              help="Write a new Ed25519 private key to KEY (mode 0600) and its public key to KEY.pub, then exit.")
@options.output_file_option
@options.common_options("relaxld")
@click.pass_context
def command(ctx, inputs, allow_undefined, target_check, exec_mode, sign, gen_key, output, traceback, error_limit,
            color, verbose):
    """Link one bytecode object (.vmo) with kernel objects (.ko) into a runnable artifact (.vmx).

    Every function the bytecode calls must be a kernel, a runtime builtin, or allowed
    with --allow-undefined. Output: FILE given with -o (default a.vmx).
    """
    from relax.driver.link import LinkOptions, generate_key_main, relaxld_main

    if gen_key is not None:
        if inputs:
            raise click.UsageError("--gen-key makes a key pair and links nothing: give it no input files")
        return generate_key_main(gen_key, verbose)
    if not inputs:
        raise click.MissingParameter(ctx=ctx, param=next(p for p in ctx.command.params if p.name == "inputs"))
    return relaxld_main(LinkOptions(inputs=tuple(inputs), output=output, allow_undefined=tuple(allow_undefined),
                                    target_check=target_check, exec_mode=exec_mode, sign=sign, verbose=verbose))


def main(argv=None) -> int:
    return run_command(command, "relaxld", argv)
