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
    SHOWN_FRAMES = 10  # format_backtrace shows this many outermost and innermost frames

    def __init__(self, message: str, backtrace: tuple[Frame, ...] = ()):
        super().__init__(message)
        self.message = message
        self.backtrace = tuple(backtrace)

    def format_backtrace(self) -> str:
        """`  [0] main+0004  model.relax:7:5` lines, outermost frame first; a deep stack (a
        runaway recursion) shows its ends and the number of frames left out between them."""
        frames = list(enumerate(self.backtrace))
        shown = self.SHOWN_FRAMES
        if len(frames) <= 2 * shown + 1:
            return "".join(f"  [{depth}] {frame}\n" for depth, frame in frames)
        outer, inner = frames[:shown], frames[-shown:]
        return ("".join(f"  [{depth}] {frame}\n" for depth, frame in outer)
                + f"  ... {len(frames) - 2 * shown} frames left out ...\n"
                + "".join(f"  [{depth}] {frame}\n" for depth, frame in inner))
