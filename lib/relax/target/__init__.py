"""Targets: what a kernel is compiled for.

Sits between the driver (`--target`) and the TIR lowering and code generators,
which read a `Target`'s kind, triple, CPU, features and GPU limits.

    Target.parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1 -mattr=+sve")
    Target.parse("cuda -arch=sm_90")
    Target.parse('{"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mattr": ["+avx2"]}')
    Target.parse("aws/graviton3")         # a tag from tags.TAGS
    Target.host()                         # this machine, as LLVM detects it

Modules: options.py (the kinds and their options, as data), tags.py (the tag
table), target.py (the frozen Target value, its normalized string and JSON),
parse.py (every spelling, checked against LLVM), llvm_info.py (what LLVM knows
about triples, CPUs and features), listing.py (`relaxc --list-targets`).
"""

from .listing import list_targets_text
from .parse import host_target, parse_target
from .target import Target

__all__ = ["Target", "host_target", "list_targets_text", "parse_target"]
