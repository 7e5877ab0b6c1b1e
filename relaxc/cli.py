"""relaxc: TVMScript in, lowered IR, kernel objects or a runnable artifact out."""

from __future__ import annotations

import click

from relax.driver import options
from relax.driver.runner import run_command

EPILOG = """\b
Examples:
  relaxc model.relax -o model.vmx                   one shot: a runnable artifact for this host
  relaxc --params model.params.npz model.relax -o model.vmx    weights bound as constants
  relaxc --sign key.pem model.relax -o model.vmx    signed (relaxld --gen-key key.pem makes the key)
  relaxc -S model.relax -o model.vms                the lowered module (input of relaxas)
  relaxc -O0 --target "llvm -mtriple=aarch64-linux-gnu" model.relax -o model.vmx
  relaxc --emit ir model.relax                      print the parsed module
  relaxc --emit json model.relax -o model.json      the IR as JSON
  relaxc --emit pyfunc model.relax                  Relax functions as Python (numpy) functions
  relaxc --emit kernels --target llvm model.relax -o model.ko
  relaxc --emit asm --target "llvm -mtriple=aarch64-linux-gnu" model.relax
  cat model.relax | relaxc --emit ir -
  relaxc --list-targets | relaxc --list-ops
"""

EMIT_KINDS = ["ir", "json", "pyfunc", "kernels", "llvm", "asm", "cuda", "vms", "vmo", "vmx"]


def _list_callback(kind: str):
    def callback(ctx: click.Context, _param, value):
        if not value or ctx.resilient_parsing:
            return
        from relax.driver.compile import listing_text

        click.echo(listing_text(kind), nl=False)
        ctx.exit(0)

    return callback


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.argument("source", metavar="FILE")
@click.option(
    "--emit", type=click.Choice(EMIT_KINDS), default=None,
    help="ir: TVMScript text; json: the IR as JSON; pyfunc: the module with every Relax function as an "
         "equivalent @I.py_func (numpy); kernels: a .ko kernel object; "
         "llvm: LLVM IR of the kernels; asm: their assembly; cuda: their CUDA C (cuda target); vms: the lowered module (-S); "
         "vmo: bytecode; vmx: a linked artifact. Default: from -o's suffix (.vmx, .vmo, .vms), else ir.",
)
@click.option("-S", "lowered_text", is_flag=True, help="Write the lowered module (.vms) after the -O pipeline.")
@click.option("-O", "opt_level", type=click.IntRange(0, 3), default=2, show_default=True, metavar="LEVEL",
              help="Optimization level of the pass pipeline, -O0 to -O3.")
@click.option("--params", "params", metavar="FILE.npz", default=None,
              help="Bind the weights of main (parameters after num_input) by name to these arrays: "
                   "the artifact carries them as constants and main takes only its inputs.")
@click.option("--allow-undefined", "allow_undefined", metavar="NAME", multiple=True,
              help="With -o X.vmx: a function registered at run time (repeatable; globs), as relaxld takes it.")
@click.option("--exec-mode", "exec_mode", type=click.Choice(["interp", "compiled"]), default=None,
              help="With -o X.vmx: the VM exec mode the artifact asks for (interp: the dispatch loop; compiled: "
                   "a static function as one native call); relaxrun --exec-mode overrides it.")
@options.sign_option
@click.option("--target", "targets", metavar="TARGET", multiple=True,
              help='Target ("llvm -mcpu=native", a JSON dictionary or a tag); repeat for a fat kernel object.')
@click.option("--list-targets", is_flag=True, expose_value=False, is_eager=True,
              callback=_list_callback("targets"), help="List target kinds, tags and LLVM targets, then exit.")
@click.option("--list-ops", is_flag=True, expose_value=False, is_eager=True,
              callback=_list_callback("ops"), help="List every operator with its signature, then exit.")
@click.option("--list-passes", is_flag=True, expose_value=False, is_eager=True,
              callback=_list_callback("passes"), help="List every pass with a line about it, then exit.")
@click.option("--passes", "passes", metavar="A,B,...", default=None,
              help="Run exactly these passes, in this order.")
@click.option("--disable-pass", "disabled", metavar="NAME", multiple=True, help="Skip a pass (repeatable).")
@click.option("--print-after-all", is_flag=True, help="Print the module after every pass, on stderr.")
@click.option("--print-before", metavar="NAME", multiple=True, help="Print the module before a pass, on stderr.")
@click.option("--print-after", metavar="NAME", multiple=True, help="Print the module after a pass, on stderr.")
@click.option("--verify-each", is_flag=True, help="Check well-formedness after every pass.")
@click.option("--pass-config", metavar="KEY=VALUE", multiple=True, help="A setting passes read (repeatable).")
@click.option("--time-passes", is_flag=True, help="Print a table of time per pass, on stderr.")
@click.option("--no-cache", "no_cache", is_flag=True,
              help="Build every kernel object anew: neither read nor fill the kernel cache (as RELAX_CACHE=0).")
@options.output_file_option
@options.common_options("relaxc")
def command(source, emit, lowered_text, opt_level, params, allow_undefined, exec_mode, sign, targets, passes, disabled,
            print_after_all, print_before, print_after, verify_each, pass_config, time_passes, no_cache, output,
            traceback, error_limit, color, verbose):
    """Compile TVMScript (Relax functions and TIR PrimFuncs)."""
    from relax.driver.compile import CompileOptions, choose_emit, compile_main

    if lowered_text and emit not in (None, "vms"):
        raise click.UsageError(f"-S writes the lowered module; it does not combine with --emit {emit}")
    if exec_mode is not None and choose_emit(emit, lowered_text, output) != "vmx":
        raise click.UsageError("--exec-mode is recorded in a linked artifact: use it with -o X.vmx")
    if sign is not None and choose_emit(emit, lowered_text, output) != "vmx":
        raise click.UsageError("--sign signs a linked artifact: use it with -o X.vmx")
    return compile_main(CompileOptions(
        source=source, emit=choose_emit(emit, lowered_text, output), output=output, verbose=verbose,
        targets=tuple(targets), opt_level=opt_level, allow_undefined=tuple(allow_undefined),
        exec_mode=exec_mode, sign=sign,
        passes=tuple(p for p in passes.split(",") if p) if passes is not None else None,
        disabled=tuple(disabled), print_after_all=print_after_all, print_before=tuple(print_before),
        print_after=tuple(print_after), verify_each=verify_each, pass_config=tuple(pass_config),
        time_passes=time_passes, params=params, use_cache=not no_cache,
    ))


def main(argv=None) -> int:
    return run_command(command, "relaxc", argv, fast_exit=True)
