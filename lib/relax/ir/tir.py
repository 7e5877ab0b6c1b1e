"""TIR nodes in one namespace: `from relax.ir import tir; tir.For(...)`."""

from .tir_expr import *  # noqa: F401,F403
from .tir_expr import ITER_TYPES, Buffer, IterVar, PrimExpr, Range, const  # noqa: F401
from .tir_stmt import *  # noqa: F401,F403
from .tir_stmt import FOR_KINDS  # noqa: F401
