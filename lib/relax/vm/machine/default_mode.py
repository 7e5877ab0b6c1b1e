"""The exec mode a VM runs when neither its caller nor the artifact names one.

Compiled mode is the fast one: a static function becomes one native call, any other
a Python function without a dispatch loop (compiled_mode.py). Its one difference in
behaviour is depth: bytecode calling bytecode recurses in Python there, so a program
that recurses stops at Python's recursion limit (about a thousand calls without the
compiler loaded) where the interpreter goes on to MAX_FRAMES. A program whose
bytecode functions can call themselves, directly, through others, or through a
closure (whose target only the running program knows), therefore runs in the
interpreter; every other program (a model's straight-line or branching main and its
helpers) runs compiled.
"""

from __future__ import annotations

from .builtins import invoke_closure
from .decoder import CALL, CALL0, CALL1, CALL_CLOSURE, CALL_VM, CALL_VM1

COMPILED, INTERPRETED = "compiled", "interp"


def default_exec_mode(bytecode: list) -> str:
    """"interp" when the decoded functions may recurse, else "compiled"."""
    index_of = {id(function.code): function.index for function in bytecode if function is not None}
    callees: dict[int, set[int]] = {}
    for function in bytecode:
        if function is None:
            continue
        edges = callees[function.index] = set()
        for instruction in function.code:
            if instruction[0] == CALL_CLOSURE or (instruction[0] in (CALL, CALL0, CALL1)
                                                  and instruction[1] is invoke_closure):
                return INTERPRETED
            if instruction[0] in (CALL_VM, CALL_VM1):
                edges.add(index_of[id(instruction[1])])
    return INTERPRETED if _has_cycle(callees) else COMPILED


def _has_cycle(callees: dict[int, set[int]]) -> bool:
    """Whether the call graph has a cycle (an iterative depth-first search, three colours)."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for root in callees:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(callees[root]))]
        while stack:
            node, pending = stack[-1]
            callee = next(pending, None)
            if callee is None:
                state[node] = 2
                stack.pop()
            elif state.get(callee) == 1:
                return True
            elif callee not in state:
                state[callee] = 1
                stack.append((callee, iter(callees.get(callee, ()))))
    return False
