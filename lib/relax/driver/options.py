"""Options that mean the same thing in every tool, defined once (../shared/CLI.md)."""

from __future__ import annotations

import click

from .version_text import version_callback


def traceback_option(f):
    return click.option(
        "--traceback", is_flag=True, hidden=False, help="Show a Python traceback for errors."
    )(f)


def error_limit_option(f):
    return click.option(
        "--error-limit", type=click.IntRange(min=0), default=20, show_default=True,
        help="Stop after this many errors (0: no limit).",
    )(f)


def target_option(f):
    return click.option(
        "--target", "target", metavar="TARGET", default=None,
        help='Target: a string such as "llvm -mcpu=native", a JSON dictionary, or a tag.',
    )(f)


def func_option(f):
    return click.option("--func", "func", metavar="NAME", default=None, help="Function to act on.")(f)


def output_file_option(f):
    return click.option("-o", "output", metavar="FILE", default=None, help="Write the result to FILE ('-' for stdout).")(f)


def sign_option(f):
    return click.option(
        "--sign", "sign", metavar="KEY", default=None,
        help="Sign the artifact with this Ed25519 private key (PEM, PKCS#8; docs/signing.md).",
    )(f)


def verbose_option(f):
    return click.option("-v", "--verbose", count=True, help="Say what is done, on stderr.")(f)


def color_option(f):
    return click.option(
        "--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
        help="Colour in diagnostics and previews.",
    )(f)


def version_option(tool: str):
    def decorate(f):
        return click.option(
            "--version", is_flag=True, expose_value=False, is_eager=True,
            callback=version_callback(tool), help="Show versions, formats, LLVM and host, then exit.",
        )(f)

    return decorate


def common_options(tool: str):
    """The options every tool has."""

    def decorate(f):
        for option in (version_option(tool), traceback_option, error_limit_option, color_option, verbose_option):
            f = option(f)
        return f

    return decorate
