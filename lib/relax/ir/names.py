"""Fresh names: a hint, else the hint numbered (hint1, hint2, ...), each name given out once.

Passes that add functions or variables name them as TVM's NameSupply does, so that
printed modules read (and diff) the same: `storage`, `storage1`, `fused_add`,
`fused_add1`. The printer numbers with a separator (`x`, `x_1`, ...).
"""

from __future__ import annotations

from typing import Iterable


def fresh_name(hint: str, taken: set[str], separator: str = "") -> str:
    """`hint`, or the first of hint1, hint2, ... (`separator` before the number) not in
    `taken`; the name returned is added to `taken`."""
    name, counter = hint, 0
    while name in taken:
        counter += 1
        name = f"{hint}{separator}{counter}"
    taken.add(name)
    return name


class NameSupply:
    """The names taken so far in a scope (a module's functions, a function's variables)."""

    def __init__(self, taken: Iterable[str] = ()):
        self.taken = set(taken)

    def fresh(self, hint: str) -> str:
        return fresh_name(hint, self.taken)
