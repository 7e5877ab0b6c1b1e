"""Block-local value numbering of the pure instructions the code generator builds.

An unrolled register tile spells the same index arithmetic, and the same element
pointers, for every element of the tile: built as written, each copy is one more
llvmlite instruction to build and print and one more for LLVM to parse and remove
again. Scalar integer arithmetic and element pointers are therefore numbered: a
second request for the same operation on the same operands in the same block gets
the first result. The builder appends to its block (allocas, which go to the start
of the entry block, have no integer operands), so the first result dominates every
later use there. LLVM's own value numbering leaves the same code either way.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir


def value_key(value: ir.Value):
    """A key equal for two operands that are the same value: constants by type and value,
    anything else by identity (a numbered result holds its operands, so ids stay unique)."""
    if isinstance(value, ir.Constant):
        return ("constant", str(value.type), value.constant)
    return id(value)


def numbered(codegen, key: tuple, build: Callable[[], ir.Value]) -> ir.Value:
    """The value `key` names in the builder's current block: built by `build` the first time."""
    key = (codegen.builder.block,) + key
    value = codegen.int_values.get(key)
    if value is None:
        value = codegen.int_values[key] = build()
    return value
