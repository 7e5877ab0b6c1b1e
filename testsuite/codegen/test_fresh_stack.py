"""call_on_fresh_stack (codegen/fresh_stack.py): the function runs on another thread, in the
caller's PassContext, and its result or exception comes back to the caller."""

import threading

import pytest

from relax.codegen.fresh_stack import call_on_fresh_stack
from relax.diagnostics import UserError
from relax.ir.pass_infra import PassContext


def test_result_context_and_thread():
    def probe(value, scale=1):
        return value * scale, PassContext.current().opt_level, threading.current_thread() is threading.main_thread()

    with PassContext(opt_level=3):
        assert call_on_fresh_stack(probe, 4, scale=2) == (8, 3, False)


def test_exceptions_reach_the_caller():
    def fail():
        raise UserError("codegen: no")

    with pytest.raises(UserError, match="codegen: no"):
        call_on_fresh_stack(fail)


def test_thread_stack_size_is_set_then_restored():
    from relax.codegen.fresh_stack import THREAD_STACK_BYTES, thread_stack_size

    before = threading.stack_size()
    with thread_stack_size():
        assert threading.stack_size() == THREAD_STACK_BYTES
    assert threading.stack_size() == before
