"""Packing compiled kernels into a .ko kernel object (the writer side of the format).

The byte layout, its checks and the reader live with the loader in
relax.runtime.kernels.container, so that the runtime can read .ko files without
the compiler; docs/file-format-ko.md describes the format. This module turns
per-target compilation results into that container.
"""

from __future__ import annotations

from ..records import record
from ..runtime.kernels.abi import KERNEL_ABI_VERSION
from ..runtime.kernels.metadata import KernelInfo
from ..target.llvm_target import TargetSpec


@record
class CompiledTarget:
    """What one target contributes: its spec, its native objects and their bitcode (one of
    each per part: object_parts.py) and the kernel metadata."""

    spec: TargetSpec
    native_objects: tuple[bytes, ...]
    bitcode: tuple[bytes, ...]
    kernels: tuple[KernelInfo, ...]


def pack_kernel_object(compiled: list[CompiledTarget]) -> bytes:
    """The .ko bytes for one or more targets (a fat object when several)."""
    # Imported here, not with the code generator: relaxc imports the container (and its ELF
    # checks) with the linker, while LLVM compiles, rather than before the first kernel.
    from ..runtime.kernels import container

    entries, objects, bitcode, parts = [], {}, {}, {}
    for index, item in enumerate(compiled):
        spec = item.spec
        entries.append(container.TargetEntry(spec.triple, spec.cpu, spec.features, KERNEL_ABI_VERSION,
                                             spec.object_format))
        if len(item.native_objects) != len(item.bitcode) or not item.native_objects:
            raise ValueError("a target's kernels need one native object and one bitcode per part")
        objects[index] = item.native_objects[0]
        bitcode[index] = item.bitcode[0]
        if len(item.native_objects) > 1:
            parts[index] = tuple(zip(item.native_objects[1:], item.bitcode[1:]))
    kernels = compiled[0].kernels if compiled else ()
    for item in compiled[1:]:
        if [k.to_json() for k in item.kernels] != [k.to_json() for k in kernels]:
            raise ValueError("kernel metadata differs between targets of one kernel object")
    return container.write(container.KernelObject(tuple(entries), tuple(kernels), objects, bitcode,
                                                   parts=parts))


def read_kernel_object(data: bytes, name: str = "<memory>") -> container.KernelObject:
    """The decoded, checked contents of a .ko (for tools such as `relaxas --dump`)."""
    from ..runtime.kernels import container

    return container.read(data, name)
