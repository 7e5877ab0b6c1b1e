"""Binds R.call_py_func("py_double", ...) for py-func.test (loaded with --plugin): a function
registered under the Python function's name wins over the source embedded in the artifact."""
from relax.runtime import register_func


@register_func
def py_double(x):
    return x * 10
