"""Rewrites a .ko as if built for another kernel ABI version: `kernel_abi.py 2 in.ko out.ko`."""
import dataclasses
import sys

from relax.runtime.kernels import container

version, source, target = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(source, "rb") as handle:
    kernel_object = container.read(handle.read(), source)
targets = tuple(dataclasses.replace(entry, abi_version=version) for entry in kernel_object.targets)
with open(target, "wb") as handle:
    handle.write(container.write(dataclasses.replace(kernel_object, targets=targets)))
