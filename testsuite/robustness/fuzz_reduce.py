"""Shrinking a failing source case: lines dropped while the same failure remains.

A mutated sample is a few dozen to a few hundred lines, most of them beside the
point. The reducer tries to drop chunks of lines, halving the chunk size down to
one line (the ddmin idea, without its complements), and keeps every drop after
which the case still fails the same way (same tool, outcome and message), until
its time is up. Binary artifacts and inputs are saved as they are.
"""

from __future__ import annotations

import dataclasses
import pathlib
import time


def reduce_source(case, name: str, still_fails, seconds: float) -> tuple[object, int]:
    """The case with `name` (a text file of it) as short as `still_fails(case)` allows
    within `seconds`; and how many lines were dropped."""
    lines = case.files[name].decode("utf-8", "replace").split("\n")
    before, deadline = len(lines), time.monotonic() + seconds
    chunk = max(1, len(lines) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        start = 0
        while start < len(lines) and time.monotonic() < deadline:
            trial = lines[:start] + lines[start + chunk:]
            candidate = dataclasses.replace(case, files={**case.files, name: "\n".join(trial).encode()})
            if trial and still_fails(candidate):
                lines, case = trial, candidate
            else:
                start += chunk
        chunk //= 2
    return case, before - len(lines)


def text_file(case) -> str | None:
    """The mutated source of a source case (case.relax, case.vms or case.vmasm), if it is one."""
    if case.category != "source":
        return None
    return next((name for name in case.files if pathlib.PurePath(name).stem == "case"), None)
