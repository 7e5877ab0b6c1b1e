"""TVMScript text <-> IR.

`parse(text, source_name)` reads what TVM's `mod.script()` prints (and the older
spellings of user code) through Python's `ast` module: the text is never executed.
`script(node)` prints IR back as TVMScript in TVM 0.27's style.
`from relax.script import I, R, T` gives the dialects as Python objects, for a module
class written in a .py file (python_dialects.py).
"""


def parse(text: str, source_name: str = "<string>"):
    from .parser import parse_module

    return parse_module(text, source_name)


def script(node) -> str:
    from .printer import script as print_script

    return print_script(node)


def __getattr__(name):
    # Loaded on first use: parse() and script() do not need the Python-side dialects.
    if name in ("I", "R", "T"):
        from . import python_dialects

        return getattr(python_dialects, name)
    raise AttributeError(f"module 'relax.script' has no attribute {name!r}")
