"""Runs a tool's click command with the exit codes and error habits of ../shared/CLI.md.

    0   success
    1   error in the input, or while compiling, linking or running
    2   command-line usage error
    3   relaxrun --expected-output mismatch
    70  internal error (a bug in the toolchain)
"""

from __future__ import annotations

import os
import sys
import traceback

import click

from ..diagnostics import DiagnosticError, UserError, report
from ..frame_room import call_with_frame_room
from .blas_threads import hold_blas_to_one_thread
from .malloc_reuse import keep_freed_memory

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_MISMATCH = 3
EXIT_INTERNAL = 70


class ToolExit(Exception):
    """Raised by a command to end with a given exit code after printing what it had to."""

    def __init__(self, code: int):
        self.code = code
        super().__init__(code)


def _wants_traceback(argv: list[str]) -> bool:
    return "--traceback" in argv or os.environ.get("RELAX_TRACEBACK") == "1"


def run_command(command: click.Command, tool: str, argv: list[str] | None = None,
                fast_exit: bool = False, serving_options: tuple[str, ...] = ()) -> int:
    """Runs `command` on `argv` (default: sys.argv[1:]) and returns the exit code.

    `fast_exit`: when run as the program (no `argv` given) and not under a profiler or
    tracer (which write their reports at exit), end the process right after the
    command instead of returning (process_exit.py), with cycle collection off from
    here on (collector.py). As the program, numpy's BLAS is held to one thread
    (blas_threads.py) and freed memory is kept for reuse (malloc_reuse.py), unless one
    of `serving_options` is given: a server runs for long, and keeps glibc's defaults."""
    if argv is None:
        hold_blas_to_one_thread()
        if not serves(sys.argv[1:], serving_options):
            keep_freed_memory()
    if fast_exit and argv is None and sys.getprofile() is None and sys.gettrace() is None:
        from .collector import paused_until_exit
        from .process_exit import ending_fast, exit_process

        ending_fast()
        paused_until_exit()
        exit_process(run_command(command, tool))
    argv = list(sys.argv[1:] if argv is None else argv)
    error_limit = _error_limit(argv)
    try:
        # The command's recursions (parser, passes, printers) run with frame room (frame_room.py).
        result = call_with_frame_room(command.main, args=argv, prog_name=tool, standalone_mode=False)
    except click.exceptions.Exit as exit_:
        return exit_.exit_code
    except click.UsageError as usage:
        usage.show()
        return EXIT_USAGE
    except click.exceptions.Abort:
        sys.stderr.write(f"{tool}: error: aborted\n")
        return EXIT_ERROR
    except click.ClickException as click_error:
        sys.stderr.write(f"{tool}: error: {click_error.format_message()}\n")
        return EXIT_ERROR
    except DiagnosticError as diagnostics:
        report(diagnostics.diagnostics, tool, sys.stderr, error_limit)
        if _wants_traceback(argv):
            traceback.print_exc()
        return EXIT_ERROR
    except UserError as user_error:
        sys.stderr.write(f"{tool}: error: {user_error}\n")
        if _wants_traceback(argv):
            traceback.print_exc()
        return EXIT_ERROR
    except ToolExit as tool_exit:
        return tool_exit.code
    except BrokenPipeError:
        # A reader such as `head` closed the pipe: not an error of ours.
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place that turns bugs into exit 70
        sys.stderr.write(
            f"{tool}: internal error: {type(exc).__name__}: {exc} "
            "(please report this; rerun with --traceback for details)\n"
        )
        if _wants_traceback(argv):
            traceback.print_exc()
        return EXIT_INTERNAL
    return result if isinstance(result, int) else EXIT_OK


def serves(args: list[str], serving_options: tuple[str, ...]) -> bool:
    """Whether the command line `args` gives one of `serving_options` (`--serve X` or `--serve=X`)."""
    return any(arg == option or arg.startswith(option + "=") for arg in args for option in serving_options)


def _error_limit(argv: list[str]) -> int:
    for index, arg in enumerate(argv):
        if arg.startswith("--error-limit="):
            value = arg.split("=", 1)[1]
        elif arg == "--error-limit" and index + 1 < len(argv):
            value = argv[index + 1]
        else:
            continue
        if value.isdigit():
            return int(value)
    return 20


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
