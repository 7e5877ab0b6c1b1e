"""A host function for worker-error.relax: worker 1 fails, every other worker returns its input."""

from relax.disco import worker_context
from relax.runtime.registry import register_func


@register_func("disco_lit.fail_on_worker_1", override=True)
def fail_on_worker_1(x):
    context = worker_context.current()
    if context is not None and context.worker_id == 1:
        raise ValueError("worker 1 refuses this tensor")
    return x
