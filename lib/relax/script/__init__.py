"""TVMScript text <-> IR.

`parse(text, source_name)` reads what TVM's `mod.script()` prints (and the older
spellings of user code) through Python's `ast` module: the text is never executed.
`script(node)` prints IR back as TVMScript in TVM 0.27's style.
`from relax.script import I, R, T` gives the dialects as Python objects, for a module
class written in a .py file (python_dialects.py).
"""

from ..lazy_names import lazy_names


def parse(text: str, source_name: str = "<string>", signatures_only=()):
    """The IRModule `text` spells. The PrimFuncs named in `signatures_only` are read as
    their signature and attributes over an empty body: for a reader that needs their
    kernels no more (the one-shot, which builds them from the module it printed)."""
    from .parser import parse_module

    return parse_module(text, source_name, signatures_only)


def script(node, printed_params: dict | None = None, printed_bindings=None) -> str:
    from .printer import script as print_script

    return print_script(node, printed_params, printed_bindings)


# Loaded on first use: parse() and script() do not need the Python-side dialects.
__getattr__ = lazy_names(__name__, dict.fromkeys("IRT", ".python_dialects"))
