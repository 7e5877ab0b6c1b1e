"""An on-disk cache of kernel objects (.ko bytes), keyed by everything that makes them.

Building the kernels of a model (scheduling, lowering, LLVM at O3, machine code)
is most of a `relaxc` run; rebuilding an unchanged model gives the same bytes.
The key is a SHA-256 over:

  - the kernels: each PrimFunc as IR JSON (relax.ir.json, deterministic), by name;
  - each target's text and its LLVM TargetSpec (triple, CPU, features, O level);
  - the pass context the kernels are lowered under (-O level and --pass-config);
  - the compiler itself: relax and llvmlite versions, the LLVM version, and the
    path, size and modification time of every source file of the relax package,
    so an edited code generator never gets an object built by the old one.

Entries live in `$RELAX_CACHE_DIR`, else `$XDG_CACHE_HOME/relax/kernels`, else
`~/.cache/relax/kernels`, one file per key: a magic, the SHA-256 of the payload,
the payload. A file that is short, has another magic or a wrong checksum is a
miss (and is rebuilt over); writes go to a temporary file renamed into place, so
concurrent builds never see half an entry; past MAX_ENTRIES the oldest are removed. `RELAX_CACHE=0` (or `relaxc
--no-cache`) turns the cache off. A hit returns exactly the bytes a build stored.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pathlib
import tempfile

MAGIC = b"RELAXKC1"
# Entries kept; past this the least recently written go (every source edit changes the keys).
MAX_ENTRIES = 256
_DIGEST = 32
_PACKAGE = pathlib.Path(__file__).resolve().parent.parent
_OFF = ("0", "off", "false", "no")


class KernelCache:
    """A directory of cached kernel objects."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = pathlib.Path(directory)

    def path(self, key: str) -> pathlib.Path:
        return self.directory / f"{key}.ko"

    def get(self, key: str) -> bytes | None:
        """The stored bytes, or None when absent, unreadable or corrupt."""
        try:
            data = self.path(key).read_bytes()
        except OSError:
            return None
        header = len(MAGIC) + _DIGEST
        if len(data) < header or not data.startswith(MAGIC):
            return None
        payload = data[header:]
        if hashlib.sha256(payload).digest() != data[len(MAGIC):header]:
            return None
        return payload

    def put(self, key: str, payload: bytes) -> None:
        """Stores `payload`; a cache that cannot be written is silently no cache."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".ko")
            try:
                with os.fdopen(handle, "wb") as stream:
                    stream.write(MAGIC + hashlib.sha256(payload).digest() + payload)
                os.replace(temporary, self.path(key))
            except BaseException:
                os.unlink(temporary)
                raise
            self._evict()
        except OSError:
            pass

    def _evict(self) -> None:
        entries = []
        for path in self.directory.glob("*.ko"):
            try:
                entries.append((path.stat().st_mtime_ns, path.name, path))
            except OSError:
                continue
        for _, _, path in sorted(entries)[:max(0, len(entries) - MAX_ENTRIES)]:
            try:
                path.unlink()
            except OSError:
                pass


def cache_directory() -> pathlib.Path:
    explicit = os.environ.get("RELAX_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "relax" / "kernels"


def default_cache() -> KernelCache | None:
    """The cache the environment asks for: on unless RELAX_CACHE is 0/off/false/no."""
    if os.environ.get("RELAX_CACHE", "1").strip().lower() in _OFF:
        return None
    return KernelCache(cache_directory())


@functools.cache
def compiler_fingerprint() -> str:
    """Versions of relax, llvmlite and LLVM, and the state of every relax source file.

    Taken once per process: the code that builds is the code imported, so a source
    edited after the import changes nothing this process compiles."""
    import llvmlite

    from ..llvm_capi import llvm_version
    from ..version import __version__

    digest = hashlib.sha256()
    digest.update(f"{__version__}|{llvmlite.__version__}|{llvm_version()}".encode())
    for path in sorted(_PACKAGE.rglob("*.py")):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"|{path.relative_to(_PACKAGE)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def cache_key(funcs: dict, targets, specs, context) -> str:
    """The key of building `funcs` ({name: PrimFunc}) for `targets` (with their TargetSpecs)
    under the PassContext `context` (its -O level and config change the schedules)."""
    from ..ir.json import to_json

    config = sorted((str(k), repr(v)) for k, v in context.config.items())
    digest = hashlib.sha256()
    header = {"targets": [str(t) for t in targets], "specs": [repr(s) for s in specs],
              "opt_level": context.opt_level, "config": config, "compiler": compiler_fingerprint()}
    digest.update(json.dumps(header, sort_keys=True).encode())
    for name in sorted(funcs):
        digest.update(f"\0{name}\0".encode())
        digest.update(to_json(funcs[name]).encode())
    return digest.hexdigest()
