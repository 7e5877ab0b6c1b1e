"""The host functions samples/packed_call.relax calls, for `relaxrun --plugin`."""
from relax.runtime import register_func


def scale_by_two(x):
    return 2 * x


def add_one_dps(x, out):
    out[...] = x + 1


register_func("samples.scale_by_two", scale_by_two)
register_func("samples.add_one_dps", add_one_dps)
