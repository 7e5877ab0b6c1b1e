"""The walks skip the fields a node type declares plain (str, int, ...: ir.node's
node_field_names): no node may ever be found in one. This reads every node of the
samples, the TVM-printed corpus and their kernels lowered for the host, and checks each
such field's value."""

import dataclasses
import glob
import os

from relax import script
from relax.ir import tir
from relax.ir.node import PLAIN_FIELD_TYPES, FrozenDict, Node, field_names
from relax.target import host_target
from relax.tir import lower_for_codegen

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SOURCES = sorted(glob.glob(os.path.join(ROOT, "samples", "*.relax"))
                 + glob.glob(os.path.join(ROOT, "testsuite", "corpus", "*.tvmscript")))
PLAIN_VALUES = (str, int, float, bool, type(None), FrozenDict)


def _plain(value) -> bool:
    if isinstance(value, tuple):
        return all(_plain(item) for item in value)
    return isinstance(value, PLAIN_VALUES) and not isinstance(value, Node)


def _misplaced_nodes(root) -> list[str]:
    """'Class.field' for each field declared plain that holds something else, below `root`."""
    found, seen, stack = [], set(), [root]
    while stack:
        value = stack.pop()
        if isinstance(value, (tuple, list)):
            stack.extend(value)
            continue
        if not isinstance(value, Node) or id(value) in seen:
            continue
        seen.add(id(value))
        plain = {f.name for f in dataclasses.fields(value) if f.type in PLAIN_FIELD_TYPES}
        for name in field_names(type(value)):
            field = getattr(value, name)
            if name in plain and not _plain(field):
                found.append(f"{type(value).__name__}.{name}")
            stack.append(field)
    return found


def _modules():
    for path in SOURCES:
        try:
            yield script.parse(open(path).read(), path)
        except Exception:  # noqa: BLE001 - files the parser refuses are other tests' business
            continue


def test_fields_declared_plain_hold_no_nodes():
    target = host_target()
    checked = 0
    misplaced = set()
    for module in _modules():
        for func in module.functions.values():
            misplaced.update(_misplaced_nodes(func))
            checked += 1
            if isinstance(func, tir.PrimFunc):
                try:
                    lowered = lower_for_codegen(func, target)
                except Exception:  # noqa: BLE001 - kernels the lowering refuses are its tests' business
                    continue
                misplaced.update(_misplaced_nodes(lowered))
    assert checked > 100
    assert not misplaced, sorted(misplaced)
