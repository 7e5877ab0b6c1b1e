"""LLVM loop metadata for TIR loop kinds: `vectorized` asks the loop vectorizer, `unrolled`
asks for a full unroll, `rolled` (serial loops unroll_policy.py picks) forbids unrolling.

llvmlite cannot build the self-referencing `distinct` node a loop ID must be, so
each hinted loop gets a placeholder node naming its hint; `resolve_loop_hints`
rewrites the placeholders in the module text before LLVM parses it.
"""

from __future__ import annotations

import re

import llvmlite.ir as ir

LOOP_HINTS = {
    "vectorized": '!{!"llvm.loop.vectorize.enable", i1 true}',
    "unrolled": '!{!"llvm.loop.unroll.full"}',
    "rolled": '!{!"llvm.loop.unroll.disable"}',
}

_PLACEHOLDER = re.compile(r'^(!\d+) = !\{ ?!"relax\.loop\.([a-z]+)\.\d+" ?\}$', re.MULTILINE)


def loop_hint(module: ir.Module, kind: str):
    """A fresh placeholder loop ID for one loop of `kind`."""
    count = module.__dict__.setdefault("_relax_loop_count", [0])
    count[0] += 1
    return module.add_metadata([ir.MetaDataString(module, f"relax.loop.{kind}.{count[0]}")])


def resolve_loop_hints(text: str) -> str:
    """Module text with each placeholder turned into `distinct !{self, hint}`."""
    return _PLACEHOLDER.sub(lambda m: f"{m.group(1)} = distinct !{{{m.group(1)}, {LOOP_HINTS[m.group(2)]}}}", text)
