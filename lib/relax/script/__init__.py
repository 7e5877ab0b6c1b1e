"""TVMScript text <-> IR.

`parse(text, source_name)` reads what TVM's `mod.script()` prints (and the older
spellings of user code) through Python's `ast` module: the text is never executed.
`script(node)` prints IR back as TVMScript in TVM 0.27's style.
`from relax.script import I, R, T` gives the dialects as Python objects, for a module
class written in a .py file (python_dialects.py).
"""

from ..lazy_names import lazy_names


def parse(text: str, source_name: str = "<string>"):
    from .parser import parse_module

    return parse_module(text, source_name)


def script(node) -> str:
    from .printer import script as print_script

    return print_script(node)


# Loaded on first use: parse() and script() do not need the Python-side dialects.
__getattr__ = lazy_names(__name__, dict.fromkeys("IRT", ".python_dialects"))
