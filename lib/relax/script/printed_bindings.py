"""Where each Relax binding lands in printed text, for a reader that keeps the IR it printed.

relaxc's one-shot must give the bytes of the staged build, whose relaxas reads the
printed .vms back and generates the bytecode from that. The bytecode of the module
read back differs from that of the module printed in three ways only, all set by
printing:

- its source locations name the text's lines and columns (`model.vms:12:9`);
- a binding of nothing whose variable nothing uses prints as a bare statement, which
  reads back bound to `_`: the code generator gives it no register;
- a function parameter, or a symbolic variable of a signature, printed under another
  name than its own (a clash, a name that is not an identifier) reads back under the
  printed name, which the bytecode records.

`script(mod, printed_bindings=PrintedBindings())` fills one of these in while it
prints: each binding's first line is marked while the lines are put together, and the
marks are taken out of the finished text, which is then the text printed without them.
The one-shot generates its bytecode from the module in memory with it
(vm.codegen.codegen_vm.generate) instead of reading the text back.
"""

from __future__ import annotations

import re

from ..records import record

# Marks a binding's first line while the printer joins lines: "\x01<number>\x02". The
# printer escapes control characters in string literals; only a Python function's source,
# printed as written, could hold the like.
_MARK = re.compile("\x01([0-9]+)\x02")


@record(mutable=True)
class PrintedBindings:
    """Filled in by script(): what the text printed says of the module's Relax bindings."""

    # id of each binding -> (line, column) of its first line, both 1-based
    positions: dict = None
    # ids of the bindings printed as bare statements (read back bound to `_`)
    bare: set = None
    # id of each Relax or symbolic variable printed under another name -> that name
    names: dict = None
    # the module's function names in the order they print (the order they read back in)
    order: tuple = ()
    # the bindings marked, by number (holds them, so that their ids stay theirs)
    marked: list = None
    # whether every marked binding's position was found (PrintedBindings.unmark) and no
    # Relax expression printed reads back as another (script.printer: a fold of the parser)
    complete: bool = True

    def __post_init__(self):
        self.positions = {} if self.positions is None else self.positions
        self.bare = set() if self.bare is None else self.bare
        self.names = {} if self.names is None else self.names
        self.marked = [] if self.marked is None else self.marked

    def number(self, binding) -> int:
        """The number of `binding`'s mark (bindings are numbered in the order they print)."""
        self.marked.append(binding)
        return len(self.marked) - 1

    @staticmethod
    def mark(number: int, lines: list[str]) -> list[str]:
        """`lines` (a binding's) with the first one marked as binding `number`'s."""
        if lines:
            lines[0] = f"\x01{number}\x02{lines[0]}"
        return lines

    def unmark(self, text: str) -> str:
        """`text` without its marks, the position of each marked binding recorded.
        `complete` stays true when every binding's mark was found, in order, after its
        line's indentation: the positions are then those of the text returned. What looks
        like a mark anywhere else stays in the text."""
        pieces, positions = [], {}
        line, scanned, start = 1, 0, 0
        for match in _MARK.finditer(text):
            line += text.count("\n", scanned, match.start())
            scanned = match.start()
            line_start = text.rfind("\n", 0, match.start()) + 1
            number = len(positions)
            if int(match.group(1)) != number or number >= len(self.marked) or text[line_start:match.start()].strip(" "):
                continue  # not a mark of ours: text as printed
            positions[id(self.marked[number])] = (line, match.start() - line_start + 1)
            pieces.append(text[start:match.start()])
            start = match.end()
        pieces.append(text[start:])
        self.positions = positions
        self.complete = self.complete and len(positions) == len(self.marked)
        return "".join(pieces)
