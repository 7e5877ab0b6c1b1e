"""`relax.vm.load(path)`: reads a .vmo (or, through a registered loader, a .vmx) file.

Files are told apart by their magic number, never by their name. Formats other than
.vmo register a loader here (the linker adds .vmx), so that this module does not
depend on them. A file of unknown magic first gets the modules named in
OPTIONAL_FORMATS imported (each registers its loader on import, if it exists).

`trust` (relaxrun --trust): only artifacts signed by one of these keys load. A format
that can be signed registers its loader with `signed=True`, and the loader checks the
signature (vm/artifact/signing.py); a file of any other format is unsigned, so refused.
"""

from __future__ import annotations

import importlib
from typing import Callable

from ...diagnostics import UserError
from .binary import FormatError
from .executable import Executable
from .vmo import MAGIC_BYTES, load_executable

# magic bytes (little-endian, as at the start of the file) -> loader(data, source)
LOADERS: dict[bytes, Callable[[bytes, str], Executable]] = {MAGIC_BYTES: load_executable}
OPTIONAL_FORMATS = ("relax.vm.artifact.vmx",)
SIGNED_FORMATS: set[bytes] = set()  # magics whose loader takes `trust=`


def register_loader(magic: bytes, loader: Callable[..., Executable], signed: bool = False) -> None:
    LOADERS[bytes(magic)] = loader
    if signed:
        SIGNED_FORMATS.add(bytes(magic))


def _find_loader(data: bytes):
    for magic, loader in LOADERS.items():
        if data[:len(magic)] == magic:
            return loader, magic
    return None, None


def load_bytes(data: bytes, source: str = "<bytes>", trust=None) -> Executable:
    """The executable in `data`; with `trust` (key files, directories of them, or a
    signing.TrustedKeys), only if a trusted key signed it."""
    loader, magic = _find_loader(data)
    if loader is None:
        for module in OPTIONAL_FORMATS:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as error:
                if error.name != module:
                    raise
        loader, magic = _find_loader(data)
    if loader is not None and trust is not None:
        if magic not in SIGNED_FORMATS:
            raise UserError(f"'{source}' is unsigned: only a linked artifact (.vmx) carries a signature "
                            "(link it with relaxld --sign KEY)")
        return loader(data, source, trust=trust)
    if loader is not None:
        return loader(data, source)
    if len(data) < 8:
        raise FormatError(f"'{source}': file too short to be a relax executable ({len(data)} bytes)")
    raise FormatError(
        f"'{source}': not a relax executable: unknown magic number 0x{int.from_bytes(data[:8], 'little'):016X}")


def load(path: str, trust=None, allow_python: bool = False, plugins=()) -> Executable:
    """The executable in the file `path` (.vmo or .vmx, told by its magic); `trust`: see load_bytes.

    For R.call_py_func (vm/machine/py_functions.py): `plugins`, Python files run first (what
    they register binds by name), and `allow_python`, whether its VMs may run the Python
    sources embedded in the file."""
    if plugins:
        from ..machine.py_functions import run_plugin

        for plugin in plugins:
            run_plugin(plugin)
    exe = _load_file(path, trust)
    exe.allow_python = bool(allow_python)
    return exe


def read_file(path: str) -> bytes:
    """The bytes of the file `path`; a missing file or a directory is a user error."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise UserError(f"'{path}': no such file or directory") from None
    except IsADirectoryError:
        raise UserError(f"'{path}': is a directory") from None


def _load_file(path: str, trust) -> Executable:
    return load_bytes(read_file(path), path, trust)
