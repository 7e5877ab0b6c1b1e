"""The error a TIR pass raises for a function it cannot lower."""

from ..diagnostics import UserError


class LoweringError(UserError):
    """A PrimFunc uses something the lowering does not support, or breaks a rule."""
