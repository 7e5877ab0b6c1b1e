"""Integer arithmetic analysis for the TIR simplifier.

bounds.py finds an interval for an integer expression given intervals of its
variables (loop extents, sizes); linear.py writes integer Add/Sub/Mul trees as
linear combinations over non-linear "atoms" and back, in a canonical order;
simplifier.py rewrites expressions bottom-up with both. Integer rewrites use ring
identities (exact under two's-complement wrapping); rules for division and modulo
additionally assume index arithmetic does not overflow, as TVM's simplifier does.
Float expressions are only constant-folded (in their own precision) and rewritten by
identities that are exact in IEEE arithmetic (x*1, x-0, x/1); never reassociated.
"""

from .bounds import Interval, bound
from .linear import Linear, expr_key, from_expr, to_expr
from .simplifier import ExprSimplifier, simplify_expr

__all__ = ["ExprSimplifier", "Interval", "Linear", "bound", "expr_key", "from_expr",
           "simplify_expr", "to_expr"]
