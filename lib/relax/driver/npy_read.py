""".npy and .npz files for `relaxrun --input`, read without trusting their headers.

numpy's own reader allocates the array a header describes before it reads the data (a
header promising terabytes in a file of a few bytes is a MemoryError), and its header
parser lets through whatever `ast`, `tokenize` and `np.dtype` raise on a damaged header.
So the header is parsed here, strictly: a dictionary of 'descr' (one element type, never
objects), 'fortran_order' and 'shape' (at most MAX_RANK sizes), each malformed header a
UserError naming the file; then the size it promises is compared with what the file
holds, and only then are the bytes copied into an array, in the machine's byte order
(a big-endian .npy comes out native, as the VM expects). Never with pickle.
"""

from __future__ import annotations

import ast
import io
import math
import struct
import sys
import zipfile
import zlib

import numpy as np

from ..diagnostics import UserError

NPZ_MAGIC = b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"  # an archive with no members is only its end record
NPY_MAGIC = b"\x93NUMPY"
MAX_RANK = 64  # numpy's NPY_MAXDIMS: no array has more dimensions
HEADER_LIMIT = 10000  # characters; numpy's max_header_size refuses longer headers too
# version -> (how the header length is stored, the header's encoding), as numpy's format.py
_HEADER_FORMATS = {(1, 0): ("<H", "latin1"), (2, 0): ("<I", "latin1"), (3, 0): ("<I", "utf8")}
_HEADER_KEYS = {"descr", "fortran_order", "shape"}


def read_npy(data: bytes, where: str) -> np.ndarray:
    """The array of a .npy file's bytes; `where` names the file in messages ("'x.npy'").
    A writable, C-contiguous array in native byte order."""
    shape, fortran_order, dtype, offset = _read_header(data, where)
    count = math.prod(shape)
    promised = count * dtype.itemsize
    held = len(data) - offset
    if promised > held:
        spelled = "x".join(map(str, shape)) or "scalar"
        raise UserError(f"{where}: the .npy header promises a {spelled} {dtype.name} array "
                        f"({promised} bytes of data), but the file holds {held} bytes after the header")
    flat = np.frombuffer(data, dtype, count, offset)
    return flat.reshape(shape, order="F" if fortran_order else "C").astype(dtype.newbyteorder("="), order="C")


def _read_header(data: bytes, where: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran_order, dtype, offset of the data) of a .npy file's bytes."""
    if not data:
        raise UserError(f"{where}: the file is empty (not a numpy .npy or .npz file)")
    if not data.startswith(NPY_MAGIC):
        raise UserError(f"{where}: not a numpy .npy or .npz file (no .npy magic string)")
    version = tuple(data[6:8])
    if version not in _HEADER_FORMATS:
        spelled = ".".join(map(str, version)) or "missing"
        raise UserError(f"{where}: .npy format version {spelled} is not supported (1.0, 2.0 and 3.0 are)")
    length_format, encoding = _HEADER_FORMATS[version]
    start = 8 + struct.calcsize(length_format)
    if len(data) < start:
        raise UserError(f"{where}: the .npy header is cut short (the file holds {len(data)} bytes)")
    (length,) = struct.unpack_from(length_format, data, 8)
    if length > HEADER_LIMIT:
        raise UserError(f"{where}: the .npy header takes {length} bytes; at most {HEADER_LIMIT} are read")
    if start + length > len(data):
        raise UserError(f"{where}: the .npy header is cut short: it takes {length} bytes, "
                        f"the file holds {len(data) - start} after the header length")
    try:
        header = ast.literal_eval(data[start:start + length].decode(encoding))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        # what literal_eval raises on text that is not a literal (UnicodeDecodeError is a ValueError)
        raise UserError(f"{where}: the .npy header is not a Python dictionary literal") from None
    shape, fortran_order, dtype = _checked_header(header, where)
    return shape, fortran_order, dtype, start + length


def _checked_header(header, where: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    if not isinstance(header, dict) or set(header) != _HEADER_KEYS:
        raise UserError(f"{where}: the .npy header is not a dictionary of 'descr', 'fortran_order' and 'shape'")
    shape, fortran_order, descr = header["shape"], header["fortran_order"], header["descr"]
    # nothing of the header is printed before it is known to be small (a 5000-digit size
    # cannot even be converted to text)
    if not isinstance(shape, tuple) or not all(type(d) is int and 0 <= d <= sys.maxsize for d in shape):
        raise UserError(f"{where}: the .npy header's shape is not a tuple of sizes from 0 to {sys.maxsize}")
    if len(shape) > MAX_RANK:
        raise UserError(f"{where}: the .npy header's shape has {len(shape)} dimensions; arrays have at most {MAX_RANK}")
    if not isinstance(fortran_order, bool):
        raise UserError(f"{where}: the .npy header's fortran_order is not True or False")
    if not isinstance(descr, str):
        raise UserError(f"{where}: the .npy header's descr is not a numpy element type such as '<f4' "
                        "(structured arrays cannot be passed to the VM)")
    try:
        dtype = np.dtype(descr)
    except (TypeError, ValueError):
        raise UserError(f"{where}: the .npy header's descr {descr[:40]!r} is not a numpy element type") from None
    if dtype.hasobject:
        raise UserError(f"{where}: the .npy file holds Python objects, which would be read with pickle: refused")
    if dtype.fields is not None or dtype.subdtype is not None or dtype.itemsize == 0:
        raise UserError(f"{where}: arrays of numpy dtype '{dtype}' cannot be passed to the VM")
    if math.prod(d for d in shape if d) * dtype.itemsize > sys.maxsize:  # numpy refuses these, a 0 size or not
        raise UserError(f"{where}: the .npy header's shape {'x'.join(map(str, shape))} is too large for an array")
    return shape, fortran_order, dtype


def is_npz(data: bytes) -> bool:
    """Whether these bytes start like a zip archive (an .npz), empty ones included."""
    return data[:4] in (NPZ_MAGIC, EMPTY_ZIP_MAGIC)


def read_npz(data: bytes, name: str) -> list[tuple[str, np.ndarray]]:
    """(key, array) for every array of an .npz file's bytes, in archive order."""
    if not data:
        raise UserError(f"'{name}': the file is empty (not a numpy .npz archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = [(info.filename, archive.read(info)) for info in archive.infolist()]
    # What zipfile raises on a damaged archive: a bad directory or CRC, a cut or corrupt
    # deflate stream, an unsupported compression (NotImplementedError), encryption (RuntimeError).
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError,
            ValueError) as error:
        raise UserError(f"'{name}': not a numpy .npy or .npz file ({error})") from None
    if not members:
        raise UserError(f"'{name}': the .npz archive holds no arrays")
    arrays = []
    for filename, member in members:
        key = filename[:-4] if filename.endswith(".npy") else filename
        arrays.append((key, read_npy(member, f"'{name}' (array '{key}')")))
    return arrays
