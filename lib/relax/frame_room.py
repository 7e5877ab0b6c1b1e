"""Calls that keep their Python frames in one block of memory, however their recursion moves.

CPython 3.11 keeps a thread's Python frames in chunks, 16 KiB each unless a frame needs
more. A call that does not fit in the current chunk maps a new one, and when the first
frame of a chunk returns, the chunk is unmapped. A recursion whose depth moves back and
forth across a chunk's end (the visitors and printers over IR, the parser) therefore maps,
faults in and unmaps the same 16 KiB again and again; in a process with other threads each
unmap also interrupts them to flush their TLBs. A relaxc build did so about two thousand
times (docs/performance-notes.md).

A chunk is sized by the frame that opens it, and a frame by its code's value stack, which
CPython reserves but writes only as the code pushes. `call_with_frame_room` calls its
function from a frame whose code declares a large value stack: that frame opens a chunk of
1 MiB and reserves half of it, writing a few words, and the frames of the call fill the
other half before any new chunk is needed. Pages the frames never reach are never touched.
A traceback through the call gives that frame a frame object as large as its value stack
(512 KiB), freed with the traceback.
"""

from __future__ import annotations

# The reserving frame's value stack in slots (8 bytes each on 64-bit builds): the chunk that
# holds it is twice as large, so about half of it is left for the call's frames.
ROOM_SLOTS = 1 << 16


def _call(function, args, kwargs):
    return function(*args, **kwargs)


# Only the declared size changes; the code runs as written.
_call.__code__ = _call.__code__.replace(co_stacksize=ROOM_SLOTS)


def call_with_frame_room(function, *args, **kwargs):
    """function(*args, **kwargs), its frames in a chunk with room for a deep recursion."""
    return _call(function, args, kwargs)
