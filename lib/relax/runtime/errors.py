"""Errors raised while bytecode runs.

A VMError is a user error (the tools exit 1 and print it without a Python
traceback): a shape mismatch, a missing kernel, a bad argument. It carries the VM
backtrace, outermost frame first, innermost last.
"""

from __future__ import annotations

from typing import NamedTuple

from ..diagnostics import UserError


class Frame(NamedTuple):
    """One frame of a VM backtrace: a function, an instruction in it, where that came from."""

    function: str
    pc: int
    location: str | None = None

    def __str__(self) -> str:
        address = f"{self.function}+{self.pc:04d}"
        return f"{address}  {self.location}" if self.location else address


class VMError(UserError):
    def __init__(self, message: str, backtrace: tuple[Frame, ...] = ()):
        super().__init__(message)
        self.message = message
        self.backtrace = tuple(backtrace)

    def format_backtrace(self) -> str:
        """`  [0] main+0004  model.relax:7:5` lines, outermost frame first."""
        return "".join(f"  [{depth}] {frame}\n" for depth, frame in enumerate(self.backtrace))
