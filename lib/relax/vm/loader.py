"""`relax.vm.load(path)`: reads a .vmo (or, through a registered loader, a .vmx) file.

Files are told apart by their magic number, never by their name. Formats other than
.vmo register a loader here (the linker adds .vmx), so that this module does not
depend on them.
"""

from __future__ import annotations

from typing import Callable

from ..diagnostics import UserError
from .binary import FormatError
from .executable import Executable
from .serialization import MAGIC_BYTES, load_executable

# magic bytes (little-endian, as at the start of the file) -> loader(data, source)
LOADERS: dict[bytes, Callable[[bytes, str], Executable]] = {MAGIC_BYTES: load_executable}


def register_loader(magic: bytes, loader: Callable[[bytes, str], Executable]) -> None:
    LOADERS[bytes(magic)] = loader


def load_bytes(data: bytes, source: str = "<bytes>") -> Executable:
    for magic, loader in LOADERS.items():
        if data[:len(magic)] == magic:
            return loader(data, source)
    if len(data) < 8:
        raise FormatError(f"'{source}': file too short to be a relax executable ({len(data)} bytes)")
    raise FormatError(
        f"'{source}': not a relax executable: unknown magic number 0x{int.from_bytes(data[:8], 'little'):016X}")


def load(path: str) -> Executable:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise UserError(f"'{path}': no such file or directory") from None
    except IsADirectoryError:
        raise UserError(f"'{path}': is a directory") from None
    return load_bytes(data, path)
