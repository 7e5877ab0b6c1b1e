"""relaxrun --plugin: the host function tiny.relax calls by name (2 * x)."""
import numpy as np

from relax.runtime import register_func

register_func("user.scale", lambda x: x * np.float32(2), override=True)
