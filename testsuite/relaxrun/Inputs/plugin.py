"""Host functions for the relaxrun lit tests (loaded with --plugin)."""
from relax.runtime import register_func


def add(a, b):
    return a + b


def fail(x):
    raise ValueError(f"refusing {x}")


register_func("test.relaxrun.add", add)
register_func("test.relaxrun.fail", fail)
