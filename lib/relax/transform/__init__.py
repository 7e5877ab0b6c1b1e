"""Relax passes and the pass infrastructure.

Each pass is a file named after its command-line name (`legalize_ops.py` is
`--passes=legalize-ops`) holding one class with a `name`, a docstring that shows a
small before/after example, and `run(mod) -> mod`; passes never mutate their input.
pass_infra.py holds the Pass base, the registry, PassContext and instruments;
pipeline.py holds the -O levels as plain lists of pass names.
"""

from ..ir.pass_infra import Pass, PassContext, PassInstrument, get_pass, list_passes_text, register_pass, run_passes

__all__ = ["Pass", "PassContext", "PassInstrument", "get_pass", "list_passes_text", "register_pass", "run_passes"]
