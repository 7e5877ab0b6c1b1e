"""Packing compiled kernels into a .ko kernel object (the writer side of the format).

The byte layout, its checks and the reader live with the loader in
relax.runtime.kernels.container, so that the runtime can read .ko files without
the compiler; docs/file-format-ko.md describes the format. This module turns
per-target compilation results into that container.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..runtime.kernels import container
from ..runtime.kernels.abi import KERNEL_ABI_VERSION
from ..runtime.kernels.metadata import KernelInfo
from .llvm_target import TargetSpec


@dataclass(frozen=True)
class CompiledTarget:
    """What one target contributes: its spec, native object, bitcode and kernel metadata."""

    spec: TargetSpec
    native_object: bytes
    bitcode: bytes
    kernels: tuple[KernelInfo, ...]


def pack_kernel_object(compiled: list[CompiledTarget]) -> bytes:
    """The .ko bytes for one or more targets (a fat object when several)."""
    entries, objects, bitcode = [], {}, {}
    for index, item in enumerate(compiled):
        spec = item.spec
        entries.append(container.TargetEntry(spec.triple, spec.cpu, spec.features, KERNEL_ABI_VERSION,
                                             spec.object_format))
        objects[index] = item.native_object
        bitcode[index] = item.bitcode
    kernels = compiled[0].kernels if compiled else ()
    for item in compiled[1:]:
        if [k.to_json() for k in item.kernels] != [k.to_json() for k in kernels]:
            raise ValueError("kernel metadata differs between targets of one kernel object")
    return container.write(container.KernelObject(tuple(entries), tuple(kernels), objects, bitcode))


def read_kernel_object(data: bytes, name: str = "<memory>") -> container.KernelObject:
    """The decoded, checked contents of a .ko (for tools such as `relaxas --dump`)."""
    return container.read(data, name)
