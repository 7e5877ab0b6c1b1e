"""The text of `relaxc --list-targets`: kinds with their options, tags with their
expansion, and the architectures this LLVM build generates code for.

Everything printed is read from the tables (options.KINDS, tags.TAGS) and from
LLVM itself, so the listing never disagrees with what `--target` accepts.
"""

from __future__ import annotations

import json

from . import llvm_info
from .options import KINDS
from .tags import HOST_TAG, TAGS


def list_targets_text() -> str:
    lines = ["Target kinds:"]
    for kind, options in KINDS.items():
        lines.append(f"  {kind}")
        for opt in options:
            if opt.name != "tag":
                lines.append(f"    -{opt.name:<30} {opt.help}")
    lines += ["", "Target tags:", f"  {HOST_TAG:<26} this machine: {_host_line()}"]
    for name, config in TAGS.items():
        lines.append(f"  {name:<26} {json.dumps(config, sort_keys=False)}")
    lines += ["", f"LLVM {llvm_info.llvm_version()} architectures (for -mtriple):",
              "  " + ", ".join(llvm_info.known_arches()),
              f"  host triple: {llvm_info.host_triple()}, host CPU: {llvm_info.host_cpu()}"]
    return "\n".join(lines) + "\n"


def _host_line() -> str:
    return f"llvm -mtriple={llvm_info.host_triple()} -mcpu={llvm_info.host_cpu()} (with its features)"
