"""Host functions that samples/packed_call.relax calls by name, registered at run time.

    relaxrun out/llvm/packed_call.vmx --plugin host_functions.py --input @data/packed_call.inputs.npz

The artifact is linked with `--allow-undefined 'samples.*'`: these names are the
user's, not the toolchain's, and are bound when the VM is created.
"""

import numpy as np

from relax.runtime import register_func


@register_func("samples.scale_by_two", override=True)
def scale_by_two(x):
    """A new tensor, 2 * x."""
    return x * np.asarray(2, dtype=x.dtype)


@register_func("samples.add_one_dps", override=True)
def add_one_dps(x, out):
    """Destination-passing: writes x + 1 into `out`."""
    out[...] = x + np.asarray(1, dtype=x.dtype)
