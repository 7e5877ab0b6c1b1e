"""Errors raised while bytecode runs.

A VMError is a user error (the tools exit 1 and print it without a Python
traceback): a shape mismatch, a missing kernel, a bad argument. It carries the VM
backtrace, innermost frame last, as (function name, instruction index) pairs.
"""

from __future__ import annotations

from ..diagnostics import UserError


class VMError(UserError):
    def __init__(self, message: str, backtrace: tuple[tuple[str, int], ...] = ()):
        super().__init__(message)
        self.message = message
        self.backtrace = tuple(backtrace)

    def format_backtrace(self) -> str:
        """`[0] main+0004` lines, outermost frame first."""
        return "".join(f"  [{depth}] {name}+{pc:04d}\n" for depth, (name, pc) in enumerate(self.backtrace))
