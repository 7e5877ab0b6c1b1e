"""The code hashes of a .ko manifest (format 0.4): the kernels' metadata bound to their code.

The manifest's "code" list names every code section of the file, in section-table
order, with the SHA-256 of its bytes:

    "code": [{"kind": "object", "target": 0, "sha256": "9f86..."},
             {"kind": "bitcode", "target": 0, "sha256": "60303..."}, ...]

A target in parts (format 0.3's layout) has one object and one bitcode entry per part,
in part order; a cuda target its cubin ("object") and its "ptx". The whole-file checksum
only says that the file is the one some writer wrote; these say that the code is the
code the signatures in the same manifest were written for. A reader refuses a file
whose code sections differ from the list in number, order, kind, target or hash, so
another model's object placed under this manifest is refused even when the file's
checksum was recomputed. (Whoever rewrites the manifest too is not stopped by a hash:
that needs a signed artifact.) Files of formats 0.1 to 0.3 carry no list and are read
as before.
"""

from __future__ import annotations

import hashlib
import re

KEY = "code"
_HEX = re.compile(r"[0-9a-f]{64}")


def describe(sections) -> list[dict]:
    """The "code" list of `sections`: (kind, target index, payload) of each code section, in table order."""
    return [{"kind": kind, "target": target, "sha256": hashlib.sha256(payload).hexdigest()}
            for kind, target, payload in sections]


def _entry(entry, index: int, refuse) -> tuple[str, int, str]:
    if not isinstance(entry, dict):
        raise refuse(f"code hash {index} of the manifest is not an object")
    kind, target, digest = entry.get("kind"), entry.get("target"), entry.get("sha256")
    if not isinstance(kind, str) or not isinstance(target, int) or isinstance(target, bool) \
            or not isinstance(digest, str) or not _HEX.fullmatch(digest):
        raise refuse(f"code hash {index} of the manifest is malformed")
    return kind, target, digest


def _where(kind: str, target: int, part: int) -> str:
    what = {"object": "native object", "bitcode": "bitcode", "ptx": "PTX"}.get(kind, kind)
    return f"the {what} of target {target}" + (f" (part {part})" if part else "")


def check(document: dict, sections, required: bool, refuse) -> None:
    """Compares the manifest's code list with `sections` ((kind, target, payload) in table order).

    `required`: the format has the list (0.4 and later); an older file is checked only
    when it has one. `refuse(why)` makes the error naming the file."""
    recorded = document.get(KEY)
    if recorded is None:
        if required:
            raise refuse("the manifest records no code hashes (format 0.4 binds the kernels' metadata to "
                         "their code)")
        return
    if not isinstance(recorded, list):
        raise refuse("the manifest's code hashes are not a list")
    if len(recorded) != len(sections):
        raise refuse(f"the manifest records {len(recorded)} code sections, the file has {len(sections)}")
    parts: dict[tuple[str, int], int] = {}
    for index, (entry, (kind, target, payload)) in enumerate(zip(recorded, sections)):
        want_kind, want_target, digest = _entry(entry, index, refuse)
        part = parts.get((kind, target), 0)
        parts[(kind, target)] = part + 1
        if (want_kind, want_target) != (kind, target):
            raise refuse(f"code section {index} is {_where(kind, target, part)}, the manifest records "
                         f"{_where(want_kind, want_target, part)} there")
        if hashlib.sha256(payload).hexdigest() != digest:
            raise refuse(f"{_where(kind, target, part)} does not match the SHA-256 its manifest records "
                         "(the code is not the code its kernel metadata describes)")

